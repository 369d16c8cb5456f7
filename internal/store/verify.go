package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// A blob's content is checked against the SHA-256 of its sidecar:
//
//   - before it is first served after Open (Open checks small blobs at
//     once; a large one is checked as it is read, see Blob), and
//   - by Verify and Scrub.
//
// A blob committed by this Store needs no check: its checksum was computed
// from the bytes as they were written. A blob that fails a check is moved
// to <dir>/quarantine at once, so it is never served again.

// blobKey names a blob in the unverified set: 16 bytes of
// SHA-256(H "/" id), where H is the hex hash of its path, so that Open's
// scan, which sees only directory names, can fill the set.
type blobKey [16]byte

func keyOf(l loc, id string) blobKey {
	var buf [64 + 1 + maxIDLen]byte
	n := copy(buf[:], l.hash())
	buf[n] = '/'
	n++
	n += copy(buf[n:], id)
	sum := sha256.Sum256(buf[:n])
	var k blobKey
	copy(k[:], sum[:])
	return k
}

// unverified is the set of blobs not checked since Open. It only shrinks:
// blobs leave it when checked, replaced, removed or quarantined. Striped
// like the store's locks; has is lock-free once it is empty.
type unverified struct {
	n       atomic.Int64
	stripes [numStripes]struct {
		mu sync.Mutex
		m  map[blobKey]struct{}
	}
}

func (u *unverified) add(l loc, id string) {
	st := &u.stripes[l.stripe]
	k := keyOf(l, id)
	st.mu.Lock()
	if st.m == nil {
		st.m = make(map[blobKey]struct{})
	}
	if _, ok := st.m[k]; !ok {
		st.m[k] = struct{}{}
		u.n.Add(1)
	}
	st.mu.Unlock()
}

func (u *unverified) remove(l loc, id string) {
	if u.n.Load() == 0 {
		return
	}
	st := &u.stripes[l.stripe]
	k := keyOf(l, id)
	st.mu.Lock()
	if _, ok := st.m[k]; ok {
		delete(st.m, k)
		u.n.Add(-1)
	}
	st.mu.Unlock()
}

func (u *unverified) has(l loc, id string) bool {
	if u.n.Load() == 0 {
		return false
	}
	st := &u.stripes[l.stripe]
	k := keyOf(l, id)
	st.mu.Lock()
	_, ok := st.m[k]
	st.mu.Unlock()
	return ok
}

// CheckStats counts the content checks of a Store since Open.
type CheckStats struct {
	// Verified is the number of checks that found a blob intact, and
	// VerifiedBytes the bytes they read.
	Verified, VerifiedBytes int64
	// Corrupt is the number of blobs found corrupt (and quarantined).
	Corrupt int64
	// ScrubBytes is the content read by Scrub, ScrubPasses its completed
	// passes.
	ScrubBytes, ScrubPasses int64
	// Unverified is the number of blobs found at Open not checked yet.
	Unverified int64
	// Compactions is the number of segments compacted, CompactErrors the
	// compactions that failed (the segment is kept).
	Compactions, CompactErrors int64
}

type checkStats struct {
	verified, verifiedBytes, corrupt, scrubBytes, scrubPasses atomic.Int64
	compactions, compactErrors                                atomic.Int64
}

// Checks returns the content check counters.
func (s *Store) Checks() CheckStats {
	return CheckStats{
		Verified: s.stats.verified.Load(), VerifiedBytes: s.stats.verifiedBytes.Load(),
		Corrupt: s.stats.corrupt.Load(), ScrubBytes: s.stats.scrubBytes.Load(),
		ScrubPasses: s.stats.scrubPasses.Load(), Unverified: s.unverified.n.Load(),
		Compactions: s.stats.compactions.Load(), CompactErrors: s.stats.compactErrors.Load(),
	}
}

// Verify re-reads the blob and compares it with the size and SHA-256
// recorded at commit. A mismatch returns an error wrapping ErrChecksum
// (with both sums), and the blob is quarantined: from then on it is
// ErrNotFound. The content is hashed without holding any lock.
func (s *Store) Verify(path, id string) error {
	if !validID(id) {
		return fmt.Errorf("store: verify %q/%q: %w", path, id, ErrBadID)
	}
	if s.closed.Load() {
		return fmt.Errorf("store: verify %q/%s: %w", path, id, ErrClosed)
	}
	l := s.locate(path)
	_, ok, err := s.verifySmall(l, path, id)
	if !ok {
		_, err = s.check(context.Background(), l, id, nil)
	}
	if err != nil {
		return wrapErr("verify", path, id, err)
	}
	return nil
}

// check reads blob id of l and compares it with its sidecar, reading at
// the pace of p (nil: at full speed). It returns what the sidecar says.
// A missing blob is ErrNotFound; a mismatch wraps ErrChecksum, and the
// blob is then in quarantine.
func (s *Store) check(ctx context.Context, l loc, id string, p *pacer) (Info, error) {
	f, fi, info, err := s.openDescribed(l, id)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, ErrNotFound
	}
	if err != nil {
		return info, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := p.copy(ctx, h, f)
	if err != nil {
		return info, err
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != info.Sum || n != info.Size {
		s.failed(l, id, fi, info)
		return info, fmt.Errorf("%w: want sha256 %s size %d, got sha256 %s size %d", ErrChecksum, info.Sum, info.Size, sum, n)
	}
	s.passed(l, id, n)
	return info, nil
}

// passed records a successful check of n bytes.
func (s *Store) passed(l loc, id string, n int64) {
	s.unverified.remove(l, id)
	s.stats.verified.Add(1)
	s.stats.verifiedBytes.Add(n)
}

// failed records a failed check of the data file described by fi (nil if
// it could not be opened) and quarantines it, unless it was replaced
// meanwhile (a repair may have raced with the check). info is what its
// sidecar says, if it could be read.
func (s *Store) failed(l loc, id string, fi fs.FileInfo, info Info) {
	s.stats.corrupt.Add(1)
	end, err := s.begin()
	if err != nil {
		return // closed: the next Open of the store checks it again
	}
	defer end()
	mu := &s.stripes[l.stripe]
	mu.Lock()
	defer mu.Unlock()
	defer s.cache.invalidateID(id, l.stripe)
	cur, err := s.fs.Lstat(l.data(id))
	if err != nil || fi != nil && !os.SameFile(fi, cur) {
		return
	}
	name := filepath.Join(s.quarantine, l.hash()+"-"+id)
	if err := s.fs.Rename(l.data(id), name); err != nil {
		return
	}
	// The counters hold the size at commit (the sidecar's) or at Open
	// (the file's then); the sidecar's is the better guess.
	size := cur.Size()
	if info.ID == id {
		size = info.Size
	}
	s.nblobs.Add(-1)
	s.nbytes.Add(-size)
	s.unverified.remove(l, id)
	_ = s.fs.Rename(l.meta(id), name+metaSuffix)
	_ = s.syncDirIf(l.dir)
	_ = s.syncDirIf(s.quarantine)
}

// copyBuf is the chunk size of checks (and of their pacing).
const copyBuf = 1 << 20

// copy copies src to dst in chunks, waiting after each as p requires.
func (p *pacer) copy(ctx context.Context, dst io.Writer, src io.Reader) (int64, error) {
	buf := make([]byte, copyBuf)
	var total int64
	for {
		n, err := src.Read(buf)
		if n > 0 {
			dst.Write(buf[:n])
			total += int64(n)
			if werr := p.wait(ctx, int64(n)); werr != nil {
				return total, werr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
