package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// syncCheckMax is the largest blob that Open checks at once when it is
// unverified; larger ones are checked as they are read (see Blob).
const syncCheckMax = 1 << 20

// Open returns the committed blob (path, id) for reading. Small blobs (at
// most CacheMaxBlob, when the cache is enabled) are served from memory
// when cached; on a miss, one of more than SectionMin bytes is backed by
// its segment file, unread (see openSection), unless it missed before
// (doorkeeper): then it is read and filled into the cache, as smaller
// ones are at every miss. Others are backed by their file. The
// caller must Close the Blob. Open takes no lock for a blob verified since
// the store opened: a concurrent Remove or replacing Commit is ordered
// either before or after it.
//
// A blob not verified yet (found on disk at Open) is checked first: a
// small one at once (a mismatch is ErrChecksum, and the blob goes to
// quarantine), a large one as it is read (see Blob).
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
	if b := s.openSection(l, path, id); b != nil {
		if !s.cache.fits(b.size) || !s.door.again(l, id) {
			return b, nil
		}
		b.Close() // its second miss: read into the cache below
	}
	gen := s.cache.gen(l.stripe) // must be sampled before the file is opened
	if _, _, data, ok, err := s.readLocked(l, path, id); ok {
		if err != nil {
			return nil, wrapErr("open", path, id, err)
		}
		if s.cache.fits(int64(len(data))) {
			s.cache.add(k, l.stripe, gen, data)
		}
		return memBlob(data), nil
	}
	if s.unverified.has(l, id) {
		return s.openUnverified(path, id, l, gen)
	}
	f, err := s.fs.Open(l.data(id))
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

// SectionMin: a small blob larger than this that misses the memory cache
// is served from its segment file, not read into memory, so that it can
// be sent with sendfile at its offset (Blob.Section; decision 0053).
// Smaller ones are cheaper to read into the cache, and to copy from it
// with their response head.
const SectionMin = 16 << 10

// openSection returns (path, id) backed by its segment file, holding a
// reference on it, if it is a small blob of more than SectionMin bytes
// whose record checked when it was last read whole; nil otherwise. It
// reads nothing: the record was checked when it entered the index
// (written by this Store, or read whole by Open's scan, or by compaction,
// which mark it suspect if it did not check), and, as for a blob in a
// file of its own, nothing is checked again per read until Verify or a
// scrub pass (decision 0053).
func (s *Store) openSection(l loc, path, id string) *Blob {
	mu := &s.stripes[l.stripe]
	mu.RLock()
	defer mu.RUnlock()
	e, ok := s.indexGet(l, path, id)
	if !ok || e.suspect() || e.bytes() <= SectionMin || !e.seg.acquire() {
		return nil
	}
	return sectionBlob(e.seg, e.offset()+recHeader+int64(len(path)+len(id)), e.bytes())
}

// openDescribed opens blob id of l and reads its sidecar, as one under the
// stripe's read lock. A sidecar that does not describe the data file wraps
// ErrChecksum (the blob is then in quarantine); a missing blob wraps
// fs.ErrNotExist. On success the caller closes f.
func (s *Store) openDescribed(l loc, id string) (f File, fi fs.FileInfo, info Info, err error) {
	mu := &s.stripes[l.stripe]
	mu.RLock()
	f, err = s.fs.Open(l.data(id))
	if err == nil {
		if fi, err = f.Stat(); err == nil {
			info, err = s.info(l.dir, id, fi)
		}
		if err != nil {
			f.Close()
		}
	}
	mu.RUnlock()
	if errors.Is(err, ErrChecksum) {
		s.failed(l, id, fi, info)
	}
	return f, fi, info, err
}

// openUnverified opens a blob that must be checked before it is served.
func (s *Store) openUnverified(path, id string, l loc, gen uint64) (*Blob, error) {
	f, fi, info, err := s.openDescribed(l, id)
	if err == nil && info.Path != path {
		f.Close()
		err = fmt.Errorf("%w: sidecar names path %q", ErrChecksum, info.Path)
		s.failed(l, id, fi, info)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound("open", path, id)
	}
	if err != nil {
		return nil, wrapErr("open", path, id, err)
	}
	size := fi.Size()
	if size > syncCheckMax && !s.cache.fits(size) {
		return &Blob{f: f, size: size, chk: &streamCheck{s: s, l: l, id: id, fi: fi, info: info, h: sha256.New()}}, nil
	}
	data := make([]byte, size)
	_, err = io.ReadFull(f, data)
	f.Close()
	if err != nil {
		return nil, wrapErr("open", path, id, err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != info.Sum {
		s.failed(l, id, fi, info)
		return nil, fmt.Errorf("store: open %q/%s: %w: want sha256 %s, got %s", path, id, ErrChecksum, info.Sum, got)
	}
	s.passed(l, id, size)
	if s.cache.fits(size) {
		s.cache.add(cacheKey{path, id}, l.stripe, gen, data)
	}
	return memBlob(data), nil
}
