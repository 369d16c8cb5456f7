package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Open returns the committed blob (path, id) for reading. Small blobs (at
// most CacheMaxBlob, when the cache is enabled) are served from memory and
// filled into the cache on a miss; others are backed by the file. The
// caller must Close the Blob. Open takes no lock: a concurrent Remove or
// replacing Commit is ordered either before or after it.
func (s *Store) Open(path, id string) (*Blob, error) {
	if !validID(id) {
		return nil, fmt.Errorf("store: open %q/%q: %w", path, id, ErrBadID)
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("store: open %q/%s: %w", path, id, ErrClosed)
	}
	k := cacheKey{path, id}
	if data, ok := s.cache.get(k); ok {
		return memBlob(data), nil
	}
	l := s.locate(path)
	gen := s.cache.gen(l.stripe) // must be sampled before the file is opened
	f, err := os.Open(l.data(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound("open", path, id)
	}
	if err != nil {
		return nil, wrapErr("open", path, id, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, wrapErr("open", path, id, err)
	}
	size := fi.Size()
	if !s.cache.fits(size) {
		return &Blob{f: f, size: size}, nil
	}
	data := make([]byte, size)
	_, err = io.ReadFull(f, data)
	f.Close()
	if err != nil {
		return nil, wrapErr("open", path, id, err)
	}
	s.cache.add(k, l.stripe, gen, data)
	return memBlob(data), nil
}
