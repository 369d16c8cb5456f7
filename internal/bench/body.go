package bench

import (
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
)

// fillRandom returns n pseudo-random bytes, the same for the same seed.
func fillRandom(n int64, seed uint64) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

// versionedBody is the content of one write: a shared, never modified base
// buffer whose first bytes (up to 8) are replaced by a sequence number, so
// that each write changes the content without copying or mutating the
// buffer (writes of one client may be concurrent in open loop). It is an
// io.ReadSeeker, so the client can re-send it after a redirect.
type versionedBody struct {
	base []byte
	head [8]byte
	nh   int // bytes of head used: min(8, len(base))
	off  int64
}

func newVersionedBody(base []byte, seq uint64) *versionedBody {
	b := &versionedBody{base: base, nh: min(8, len(base))}
	binary.LittleEndian.PutUint64(b.head[:], seq)
	return b
}

func (b *versionedBody) Read(p []byte) (int, error) {
	if b.off >= int64(len(b.base)) {
		return 0, io.EOF
	}
	n := 0
	if b.off < int64(b.nh) {
		n = copy(p, b.head[b.off:b.nh])
	}
	n += copy(p[n:], b.base[b.off+int64(n):])
	b.off += int64(n)
	return n, nil
}

func (b *versionedBody) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += b.off
	case io.SeekEnd:
		offset += int64(len(b.base))
	default:
		return 0, errors.New("versionedBody.Seek: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("versionedBody.Seek: negative position")
	}
	b.off = offset
	return offset, nil
}
