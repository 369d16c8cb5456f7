package raftstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/mure-dev/mure/internal/store"
)

var (
	// ErrKeyNotFound is what raft expects (it compares the message) for a
	// stable-store key never set.
	ErrKeyNotFound = errors.New("not found")
	// ErrCorrupt: a segment holds what this package never writes.
	ErrCorrupt = errors.New("raft log: corrupt")
	// ErrBroken: an earlier write or sync failed, so what the disk holds
	// is unknown; the store refuses every write until it is reopened.
	ErrBroken = errors.New("raft log: an earlier write failed")
)

// Options configure a Store.
type Options struct {
	// FS is the file system the log lives on (nil: the operating
	// system's). Tests pass a disk that loses power (store/crashfs).
	FS store.FS
	// NoSync skips fsync (tests and benchmarks only: it voids raft's
	// promise that an acknowledged entry survives a power failure).
	NoSync bool
	// SegmentBytes: a new segment file is started when the one being
	// appended to passes this size (0: 64 MiB). Old segments are
	// deleted once raft has compacted every entry they hold.
	SegmentBytes int64
}

// Store implements raft.LogStore and raft.StableStore as an append-only
// log of records in segment files (record.go). Every write appends its
// records in one write and one fdatasync before it returns, so raft's
// batch of entries costs one sync; zeros written a chunk ahead of the
// appends spare that sync the file's metadata (prealloc.go). The index
// of entries is kept in memory.
type Store struct {
	dir  string
	fs   store.FS
	opts Options
	lock io.Closer

	wmu    sync.Mutex // one append (write, sync) at a time
	broken error      // under wmu

	mu     sync.RWMutex
	segs   []*segment // oldest first; the last is the one appended to
	first  uint64     // index of locs[0]
	locs   []loc
	stable map[string][]byte
}

// segment is one file of the log.
type segment struct {
	seq   uint64
	f     store.File
	size  int64 // end of the records (of the active one: appended so far)
	alloc int64 // end of what was written, records and zeros ahead of them (prealloc.go); under wmu
	live  int   // entries of the index stored in it
}

// loc is where an entry's record payload lies.
type loc struct {
	seg *segment
	off int64
	n   int
}

var (
	_ raft.LogStore    = (*Store)(nil)
	_ raft.StableStore = (*Store)(nil)
)

// Open opens the log in dir (creating it if needed), replays it, and
// starts a new segment to append to.
func Open(dir string, opts Options) (*Store, error) {
	if opts.FS == nil {
		opts.FS = store.OS()
	}
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = 64 << 20
	}
	s := &Store{dir: dir, fs: opts.FS, opts: opts, stable: map[string][]byte{}}
	if err := s.ensureDir(); err != nil {
		return nil, fmt.Errorf("raft log %s: %w", dir, err)
	}
	l, err := s.fs.Lock(filepath.Join(dir, "LOCK"))
	if err != nil {
		return nil, fmt.Errorf("raft log %s: %w", dir, err)
	}
	s.lock = l
	if err := s.replay(); err != nil {
		s.Close()
		return nil, fmt.Errorf("raft log %s: %w", dir, err)
	}
	s.wmu.Lock()
	err = s.startSegment()
	s.wmu.Unlock()
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("raft log %s: %w", dir, err)
	}
	return s, nil
}

// Close closes the files.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for _, sg := range s.segs {
		if err := sg.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.segs = nil
	if s.broken == nil {
		s.broken = errors.New("raft log: closed")
	}
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
	return first
}

// FirstIndex implements raft.LogStore.
func (s *Store) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.locs) == 0 {
		return 0, nil
	}
	return s.first, nil
}

// LastIndex implements raft.LogStore.
func (s *Store) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.locs) == 0 {
		return 0, nil
	}
	return s.first + uint64(len(s.locs)) - 1, nil
}

// GetLog implements raft.LogStore.
func (s *Store) GetLog(index uint64, log *raft.Log) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.locs) == 0 || index < s.first || index-s.first >= uint64(len(s.locs)) {
		return raft.ErrLogNotFound
	}
	l := s.locs[index-s.first]
	b := make([]byte, l.n)
	if _, err := l.seg.f.ReadAt(b, l.off); err != nil {
		return fmt.Errorf("raft log: read entry %d: %w", index, err)
	}
	return decode(b[1:], log)
}

// StoreLog implements raft.LogStore.
func (s *Store) StoreLog(log *raft.Log) error { return s.StoreLogs([]*raft.Log{log}) }

// StoreLogs implements raft.LogStore: one write, one sync.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.RLock()
	next, empty := s.first+uint64(len(s.locs)), len(s.locs) == 0
	s.mu.RUnlock()
	for i, l := range logs {
		if (!empty || i > 0) && l.Index != next {
			return fmt.Errorf("raft log: store entry %d, expected %d: %w", l.Index, next, ErrCorrupt)
		}
		next = l.Index + 1
	}
	n := 0
	for _, l := range logs {
		n += recHeader + 1 + entrySize(l)
	}
	buf := make([]byte, 0, n)
	for _, l := range logs {
		var start int
		buf, start = beginRecord(buf, kindEntry)
		buf = endRecord(appendEntry(buf, l), start) // encoded in place: no copy per entry
	}
	return s.append(buf)
}

// DeleteRange implements raft.LogStore (inclusive range): a prefix, a
// suffix, or everything.
func (s *Store) DeleteRange(lo, hi uint64) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.RLock()
	_, _, _, err := s.clampDelete(lo, hi)
	s.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("raft log: %w", err)
	}
	if err := s.append(appendRecord(nil, kindDelete, deleteBody(lo, hi))); err != nil {
		return err
	}
	return s.dropDeadSegments()
}

// Set implements raft.StableStore.
func (s *Store) Set(k, v []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.append(appendRecord(nil, kindSet, setBody(k, v)))
}

// Get implements raft.StableStore.
func (s *Store) Get(k []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.stable[string(k)]
	if !ok {
		return nil, ErrKeyNotFound
	}
	return bytes.Clone(v), nil
}

// SetUint64 implements raft.StableStore.
func (s *Store) SetUint64(k []byte, v uint64) error {
	return s.Set(k, binary.BigEndian.AppendUint64(nil, v))
}

// GetUint64 implements raft.StableStore.
func (s *Store) GetUint64(k []byte) (uint64, error) {
	v, err := s.Get(k)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raft store: %q holds %d bytes, not a uint64", k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
