package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// Small blobs (at most Options.SmallMax bytes) live in segment files
// (decision 0037, segments.go); the index below says where. It is split
// like the lock stripes, and s.small[i] is guarded by s.stripes[i].

// smallEntry locates a small blob's record (32 bytes: an index of a
// million small blobs costs about 115 MB, BenchmarkSmallIndexMemory).
type smallEntry struct {
	id   string
	seg  *segment
	off  uint32 // of the record in seg (segments are at most segmentMax)
	size uint32 // of the content; the top bit is entrySuspect
}

// entrySuspect marks a record whose content did not check when it was
// last read whole (by Open's scan or by compaction): every read of it
// reads and checks it again (finding it corrupt), none is served from the
// segment file unread (openSection).
const entrySuspect = 1 << 31

func newEntry(id string, seg *segment, off, size int64) smallEntry {
	return smallEntry{id: id, seg: seg, off: uint32(off), size: uint32(size)}
}

// suspectIf returns e marked suspect if bad (its content did not check).
func (e smallEntry) suspectIf(bad bool) smallEntry {
	if bad {
		e.size |= entrySuspect
	}
	return e
}

func (e smallEntry) offset() int64 { return int64(e.off) }
func (e smallEntry) bytes() int64  { return int64(e.size &^ entrySuspect) }
func (e smallEntry) suspect() bool { return e.size&entrySuspect != 0 }

func recLen(path string, e smallEntry) int64 {
	return recHeader + int64(len(path)+len(e.id)) + e.bytes()
}

// indexGet finds (path, id). Caller holds l's stripe lock. The index is
// keyed by the path's hash (l.key), not the path: the record names it.
func (s *Store) indexGet(l loc, path, id string) (smallEntry, bool) {
	for _, e := range s.small[l.stripe][l.key] {
		if e.id == id {
			return e, true
		}
	}
	return smallEntry{}, false
}

// indexSet records e as path's blob e.id, replacing an older record of
// it. Caller holds l's stripe lock for writing.
func (s *Store) indexSet(l loc, path string, e smallEntry) (old smallEntry, had bool) {
	m := s.small[l.stripe]
	if m == nil {
		m = make(map[pathKey][]smallEntry)
		s.small[l.stripe] = m
	}
	es := m[l.key]
	e.seg.live.Add(recLen(path, e))
	for i := range es {
		if es[i].id == e.id {
			old, es[i] = es[i], e
			s.deadened(old.seg, recLen(path, old))
			return old, true
		}
	}
	m[l.key] = append(es, e)
	return smallEntry{}, false
}

// indexDel forgets path's blob id. Caller holds l's stripe lock for
// writing.
func (s *Store) indexDel(l loc, path, id string) (old smallEntry, had bool) {
	m := s.small[l.stripe]
	es := m[l.key]
	for i := range es {
		if es[i].id == id {
			old = es[i]
			if len(es) == 1 {
				delete(m, l.key)
			} else {
				m[l.key] = append(es[:i:i], es[i+1:]...)
			}
			s.deadened(old.seg, recLen(path, old))
			return old, true
		}
	}
	return smallEntry{}, false
}

// commitSmall appends the writer's buffered content as a record, points
// the index at it, and returns once the record is durable (group commit).
func (w *Writer) commitSmall(info Info) error {
	s := w.s
	rec := record{kind: recBlob, path: w.path, id: w.id, size: w.n, mtime: info.ModTime.UnixNano()}
	w.h.Sum(rec.sum[:0])
	pb := bufPool.Get().(*[]byte) // the record is garbage once written
	b := appendRecord((*pb)[:0], &rec, w.buf)
	w.release()
	l := s.locate(w.path)
	mu := &s.stripes[l.stripe]
	mu.Lock()
	seg, off, pos, err := s.log.append(b)
	if cap(b) == writeBufSize { // not grown past the pool's size
		*pb = b[:0]
		bufPool.Put(pb)
	}
	if err != nil {
		mu.Unlock()
		return err
	}
	old, had := s.indexSet(l, w.path, newEntry(w.id, seg, off, w.n))
	if had {
		s.nbytes.Add(w.n - old.bytes())
	} else {
		s.nblobs.Add(1)
		s.nbytes.Add(w.n)
	}
	s.cache.invalidate(cacheKey{w.path, w.id}, l.stripe)
	s.unverified.remove(l, w.id)
	ferr := fs.ErrNotExist
	if s.dirMay(l) {
		_, ferr = s.fs.Lstat(l.data(w.id))
	}
	mu.Unlock()
	if s.hookAppended != nil {
		s.hookAppended(w.path)
	}
	if err := s.log.waitDurable(pos); err != nil {
		s.undoSmall(l, w.path, newEntry(w.id, seg, off, w.n))
		return err
	}
	if ferr == nil {
		// The same id in a file of its own (committed with a size above
		// SmallMax): the record replaces it.
		mu.Lock()
		defer mu.Unlock()
		return s.removeFiles(l, w.path, "commit", func(id string) bool { return id == w.id })
	}
	return nil
}

// undoSmall forgets e, path's record whose fsync failed, so that a
// commit that returned an error is not readable (as install undoes a
// file's). An older record of the same id that e replaced is forgotten
// too rather than restored: compaction may have deleted its segment
// meanwhile, and ids name one content. Both may come back at the next
// Open if their bytes reached the disk after all; the log refuses every
// write after a failed fsync until then (segLog.err).
func (s *Store) undoSmall(l loc, path string, e smallEntry) {
	mu := &s.stripes[l.stripe]
	mu.Lock()
	defer mu.Unlock()
	if cur, ok := s.indexGet(l, path, e.id); !ok || cur != e {
		return // replaced or removed since
	}
	s.indexDel(l, path, e.id)
	s.nblobs.Add(-1)
	s.nbytes.Add(-e.bytes())
	s.cache.invalidate(cacheKey{path, e.id}, l.stripe)
}

// readSmall reads e's record whole and checks it: both checksums, and
// that it is path's blob e.id.
func (s *Store) readSmall(path string, e smallEntry) (rec record, data []byte, err error) {
	buf := make([]byte, recLen(path, e))
	if _, err := e.seg.f.ReadAt(buf, e.offset()); err != nil {
		return rec, nil, err
	}
	rec, data, err = decodeRecord(buf)
	if err == nil {
		err = rec.isBlob(path, e.id)
	}
	if err != nil {
		return rec, buf, fmt.Errorf("%w: %s at %d: %w", ErrChecksum, e.seg.name, e.off, err)
	}
	return rec, data, nil
}

// isBlob checks that r is path's blob id.
func (r *record) isBlob(path, id string) error {
	if r.kind != recBlob || r.path != path || r.id != id {
		return fmt.Errorf("%w: record of %q/%s where %q/%s was expected", errBadRecord, r.path, r.id, path, id)
	}
	return nil
}

// readHead reads and checks e's record without its content: the header,
// whose CRC covers the content's size, CRC and SHA-256, then the path and
// id. Enough for Stat, List and Walk, which do not read the content.
// Caller holds the stripe lock.
func (s *Store) readHead(e smallEntry) (record, error) {
	h := make([]byte, recHeader+256)
	n, err := e.seg.f.ReadAt(h, e.offset())
	if n < recHeader {
		return record{}, fmt.Errorf("%s at %d: %w", e.seg.name, e.off, err)
	}
	rec, pathLen, idLen, err := decodeHeader(h[:recHeader])
	if err == nil {
		if need := recHeader + pathLen + idLen; need > n {
			h = make([]byte, need)
			if _, err := e.seg.f.ReadAt(h, e.offset()); err != nil {
				return record{}, err
			}
		}
		err = checkNames(&rec, h[:recHeader], h[recHeader:recHeader+pathLen+idLen], idLen)
	}
	if err != nil {
		return record{}, fmt.Errorf("%w: %s at %d: %w", ErrChecksum, e.seg.name, e.off, err)
	}
	return rec, nil
}

// headOf is readHead of path's blob e.id, checked to be that blob.
func (s *Store) headOf(path string, e smallEntry) (record, error) {
	rec, err := s.readHead(e)
	if err == nil {
		if err = rec.isBlob(path, e.id); err != nil {
			err = fmt.Errorf("%w: %s at %d: %w", ErrChecksum, e.seg.name, e.off, err)
		}
	}
	return rec, err
}

// readLocked reads (path, id) under its stripe's read lock. ok is false
// when it is not a small blob.
func (s *Store) readLocked(l loc, path, id string) (e smallEntry, rec record, data []byte, ok bool, err error) {
	mu := &s.stripes[l.stripe]
	mu.RLock()
	e, ok = s.indexGet(l, path, id)
	if ok {
		rec, data, err = s.readSmall(path, e)
	}
	mu.RUnlock()
	if errors.Is(err, ErrChecksum) {
		s.smallFailed(l, path, e, data)
	}
	return e, rec, data, ok, err
}

// statSmall is Stat of a small blob, from its record's header (readHead).
// A record found bad is read whole, checked and quarantined as a read
// would (readLocked). ok is false when it is not a small blob.
func (s *Store) statSmall(l loc, path, id string) (info Info, ok bool, err error) {
	mu := &s.stripes[l.stripe]
	mu.RLock()
	e, ok := s.indexGet(l, path, id)
	var rec record
	if ok {
		rec, err = s.headOf(path, e)
	}
	mu.RUnlock()
	if ok && err != nil {
		_, rec, _, ok, err = s.readLocked(l, path, id)
	}
	if !ok || err != nil {
		return Info{}, ok, err
	}
	return smallInfo(&rec, path, id), true, nil
}

func smallInfo(rec *record, path, id string) Info {
	return Info{Path: path, ID: id, Size: rec.size, Sum: hex.EncodeToString(rec.sum[:]), ModTime: time.Unix(0, rec.mtime)}
}

// verifySmall checks a small blob's SHA-256 (its CRCs are checked by
// every read). ok is false when it is not a small blob.
func (s *Store) verifySmall(l loc, path, id string) (info Info, ok bool, err error) {
	e, rec, data, ok, err := s.readLocked(l, path, id)
	if !ok || err != nil {
		return Info{}, ok, err
	}
	info = smallInfo(&rec, path, id)
	if sum := sha256.Sum256(data); sum != rec.sum {
		s.smallFailed(l, path, e, data)
		return info, true, fmt.Errorf("%w: want sha256 %s, got %x", ErrChecksum, info.Sum, sum)
	}
	s.passed(l, id, rec.size)
	return info, true, nil
}

// smallFailed quarantines a small blob found corrupt (bad: the record as
// read), unless it was replaced meanwhile: a copy of the record goes to
// quarantine/, a removal record is appended.
func (s *Store) smallFailed(l loc, path string, e smallEntry, bad []byte) {
	s.stats.corrupt.Add(1)
	end, err := s.begin()
	if err != nil {
		return
	}
	defer end()
	mu := &s.stripes[l.stripe]
	mu.Lock()
	cur, ok := s.indexGet(l, path, e.id)
	if !ok || cur != e {
		mu.Unlock()
		return
	}
	if f, err := s.fs.CreateTemp(s.quarantine, l.hash()+"-"+e.id+"-*.rec"); err == nil {
		_, _ = f.Write(bad)
		f.Close()
	}
	pos, _ := s.removeSmallLocked(l, path, func(id string) bool { return id == e.id })
	mu.Unlock()
	_ = s.log.waitDurable(pos)
}

// removeSmallLocked appends a removal record for each of path's small
// blobs that doomed picks and drops them from the index; the caller holds
// l's stripe lock and waits for pos to be durable before it answers.
func (s *Store) removeSmallLocked(l loc, path string, doomed func(id string) bool) (pos int64, err error) {
	var b []byte
	var gone []smallEntry
	for _, e := range s.small[l.stripe][l.key] {
		if doomed(e.id) {
			b = appendRecord(b, &record{kind: recRemoval, path: path, id: e.id, ref: e.seg.seq, mtime: time.Now().UnixNano()}, nil)
			gone = append(gone, e)
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	if _, _, pos, err = s.log.append(b); err != nil {
		return 0, err
	}
	for _, e := range gone {
		s.indexDel(l, path, e.id)
		s.nblobs.Add(-1)
		s.nbytes.Add(-e.bytes())
		s.cache.invalidate(cacheKey{path, e.id}, l.stripe)
	}
	return pos, nil
}

// smallIDs appends the ids of path's small blobs. Caller holds l's
// stripe lock.
func (s *Store) smallIDs(l loc, ids []string) []string {
	for _, e := range s.small[l.stripe][l.key] {
		ids = append(ids, e.id)
	}
	return ids
}

// Where tells where the content of blob (path, id) lies on disk: a file
// and the offset of the content in it (0 for a blob in a file of its own;
// a small blob is inside a segment). For tools and tests that inspect or
// damage a copy.
func (s *Store) Where(path, id string) (name string, off, size int64, err error) {
	if !validID(id) {
		return "", 0, 0, fmt.Errorf("store: where %q/%q: %w", path, id, ErrBadID)
	}
	l := s.locate(path)
	mu := &s.stripes[l.stripe]
	mu.RLock()
	e, ok := s.indexGet(l, path, id)
	mu.RUnlock()
	if ok {
		return e.seg.name, e.offset() + recHeader + int64(len(path)+len(id)), e.bytes(), nil
	}
	fi, err := s.fs.Lstat(l.data(id))
	if err != nil {
		return "", 0, 0, notFound("where", path, id)
	}
	return filepath.Clean(l.data(id)), 0, fi.Size(), nil
}
