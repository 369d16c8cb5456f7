package store

import (
	"context"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
)

// streamCheck is the state of a Blob being checked as it is read.
type streamCheck struct {
	s    *Store
	l    loc
	id   string
	fi   fs.FileInfo // the data file checked (quarantined only if unchanged)
	info Info        // what its sidecar says
	h    hash.Hash
	// hashed is how much of the content, from its start, went through h;
	// pos is the Blob's offset. Reads are checked as they go while both
	// are equal.
	hashed, pos int64
}

// checkedRead is Read while a check is under way or after it failed.
func (b *Blob) checkedRead(p []byte) (int, error) {
	if b.bad != nil {
		return 0, b.bad
	}
	c := b.chk
	if c.pos != c.hashed {
		if err := b.checkAll(); err != nil {
			return 0, err
		}
		return b.f.Read(p)
	}
	n, err := b.f.Read(p)
	c.h.Write(p[:n])
	c.hashed += int64(n)
	c.pos += int64(n)
	if c.hashed >= b.size || err == io.EOF {
		// These are the last bytes: hand them out only if the whole is right.
		if cerr := b.conclude(); cerr != nil {
			return 0, cerr
		}
	}
	return n, err
}

// checkAll finishes a check under way by reading the rest of the blob.
func (b *Blob) checkAll() error {
	if b.bad != nil {
		return b.bad
	}
	c := b.chk
	if c == nil {
		return nil
	}
	n, err := (*pacer)(nil).copy(context.Background(), c.h, io.NewSectionReader(b.f, c.hashed, math.MaxInt64-c.hashed))
	c.hashed += n
	if err != nil {
		return err // an I/O error: the blob stays unverified
	}
	return b.conclude()
}

// conclude compares the hash of everything read with the sidecar's.
func (b *Blob) conclude() error {
	c := b.chk
	b.chk = nil
	sum := hex.EncodeToString(c.h.Sum(nil))
	if sum != c.info.Sum || c.hashed != b.size {
		c.s.failed(c.l, c.id, c.fi, c.info)
		b.bad = fmt.Errorf("store: read %q/%s: %w: want sha256 %s size %d, got sha256 %s size %d",
			c.info.Path, c.id, ErrChecksum, c.info.Sum, b.size, sum, c.hashed)
		return b.bad
	}
	c.s.passed(c.l, c.id, c.hashed)
	return nil
}
