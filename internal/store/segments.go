package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// segmentsDir holds the segment files of small blobs (decision 0037).
const segmentsDir = "segments"

// segmentMax is the size at which the current segment is sealed and the
// next one begins.
const segmentMax = 64 << 20

// segment is one segment file.
type segment struct {
	seq  uint64
	name string // <dir>/segments/<16 hex>.seg
	f    File   // for reading (ReadAt); the current one is also written
	size int64  // bytes of valid records (grows while current)
	live atomic.Int64
	// sealed: no more appends, size is final. queued: compaction asked
	// for.
	sealed, queued atomic.Bool
	// refs counts the holders of f: the log (until drop or close) and
	// each Blob served from the segment (until its Close). The last one
	// closes f, so a blob sent from a segment that compaction deletes
	// meanwhile keeps its file open (unlinked) until it is sent.
	refs atomic.Int64
}

func newSegment(seq uint64, name string, f File) *segment {
	seg := &segment{seq: seq, name: name, f: f}
	seg.refs.Store(1) // the log's
	return seg
}

// acquire takes a reference on seg's file; false once the last one is
// gone (the file is closed or being closed).
func (seg *segment) acquire() bool {
	for {
		n := seg.refs.Load()
		if n <= 0 {
			return false
		}
		if seg.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release gives back a reference; the last one closes the file.
func (seg *segment) release() {
	if seg.refs.Add(-1) == 0 {
		seg.f.Close()
	}
}

func segName(dir string, seq uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%016x.seg", seq))
}

// segLog appends records to the current segment and makes them durable
// with group commit: a writer appends under mu, then waits in
// waitDurable until one fsync covers its bytes. Positions are logical:
// bytes appended since Open, across segments.
type segLog struct {
	fs   FS
	dir  string
	sync bool
	max  int64

	mu    sync.Mutex
	cur   *segment // nil: the next append starts a segment
	total int64    // logical bytes appended
	err   error    // sticky: a failed fsync

	syncMu  sync.Mutex   // held during a group-commit fsync (drop waits for it)
	durable atomic.Int64 // logical bytes known durable

	// roundMu guards syncing (a writer fsyncs for the others) and round,
	// closed when that fsync ends: its waiters wake at once, not one
	// after the other as queued on a mutex.
	roundMu sync.Mutex
	syncing bool
	round   chan struct{}
	syncs   atomic.Int64 // group-commit fsyncs made (benchmarks)

	segsMu sync.RWMutex
	segs   map[uint64]*segment
	next   uint64 // seq of the next segment
}

// append writes b (whole records) to the current segment, starting one
// if needed, and returns the segment, the offset of b in it and the
// logical position of its end, for waitDurable.
func (l *segLog) append(b []byte) (*segment, int64, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, 0, 0, l.err
	}
	if l.cur != nil && l.cur.size > 0 && l.cur.size+int64(len(b)) > l.max {
		if err := l.seal(); err != nil {
			return nil, 0, 0, err
		}
	}
	if l.cur == nil {
		if err := l.start(); err != nil {
			return nil, 0, 0, err
		}
	}
	seg := l.cur
	if _, err := seg.f.Write(b); err != nil {
		// A partial record may end the segment: it is never written
		// after again (a scan stops there), and the next append starts
		// a new segment.
		if serr := l.seal(); serr != nil {
			return nil, 0, 0, serr
		}
		return nil, 0, 0, err
	}
	off := seg.size
	seg.size += int64(len(b))
	l.total += int64(len(b))
	return seg, off, l.total, nil
}

// seal ends the current segment: fsynced whole, so every position
// appended so far is durable. Caller holds mu.
func (l *segLog) seal() error {
	seg := l.cur
	l.cur = nil
	defer seg.sealed.Store(true)
	if l.sync {
		if err := Datasync(seg.f); err != nil {
			l.err = fmt.Errorf("store: sync segment %s: %w", seg.name, err)
			return l.err
		}
	}
	l.advance(l.total)
	return nil
}

// start begins a new segment: an empty temp file renamed into place, its
// directory fsynced (so that what is appended to it and fsynced is found
// after a power loss). Caller holds mu.
func (l *segLog) start() error {
	seq := l.next
	f, err := l.fs.CreateTemp(l.dir, "seg-*.tmp")
	if err != nil {
		return err
	}
	name := segName(l.dir, seq)
	err = l.fs.Rename(f.Name(), name)
	if err == nil && l.sync {
		err = l.fs.SyncDir(l.dir)
	}
	if err != nil {
		f.Close()
		l.fs.Remove(f.Name())
		l.fs.Remove(name)
		return err
	}
	seg := newSegment(seq, name, f)
	l.segsMu.Lock()
	l.segs[seq] = seg
	l.segsMu.Unlock()
	l.next++
	l.cur = seg
	return nil
}

// oldest reports whether seg is the oldest segment.
func (l *segLog) oldest(seg *segment) bool {
	l.segsMu.RLock()
	defer l.segsMu.RUnlock()
	for _, s := range l.segs {
		if s.seq < seg.seq {
			return false
		}
	}
	return true
}

// waitDurable returns once the logical position pos is durable: the
// first writer to find no fsync under way fsyncs the current segment for
// every byte appended so far; those that come while it does wait for it
// to end, then see whether it covered them (one of the others fsyncs
// next).
func (l *segLog) waitDurable(pos int64) error {
	if !l.sync {
		return nil
	}
	for l.durable.Load() < pos {
		l.roundMu.Lock()
		if l.durable.Load() >= pos {
			l.roundMu.Unlock()
			break
		}
		if l.syncing {
			if l.round == nil {
				l.round = make(chan struct{})
			}
			round := l.round
			l.roundMu.Unlock()
			<-round
			continue
		}
		l.syncing = true
		l.roundMu.Unlock()
		err := l.syncAll()
		l.roundMu.Lock()
		l.syncing = false
		round := l.round
		l.round = nil
		l.roundMu.Unlock()
		if round != nil {
			close(round)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// syncAll syncs the current segment (fdatasync: Datasync), which makes
// every byte appended so far durable (a segment sealed meanwhile was
// synced by seal; the current one is the one the end ends in). A failure
// is sticky.
func (l *segLog) syncAll() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	seg, target, err := l.cur, l.total, l.err
	l.mu.Unlock()
	if err == nil && seg != nil {
		l.syncs.Add(1)
		if err = Datasync(seg.f); err != nil {
			err = fmt.Errorf("store: sync segment %s: %w", seg.name, err)
			l.mu.Lock()
			l.err = err
			l.mu.Unlock()
		}
	}
	if err == nil {
		l.advance(target)
	}
	return err
}

// end returns the logical position of the end of what was appended so
// far.
func (l *segLog) end() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// advance raises durable to pos.
func (l *segLog) advance(pos int64) {
	for {
		d := l.durable.Load()
		if d >= pos || l.durable.CompareAndSwap(d, pos) {
			return
		}
	}
}

// get returns segment seq, or nil.
func (l *segLog) get(seq uint64) *segment {
	l.segsMu.RLock()
	defer l.segsMu.RUnlock()
	return l.segs[seq]
}

// drop forgets seg and deletes its file (directory fsynced). Nothing in
// the index may point into it any more; a Blob still being read from it
// holds the file open until its Close (segment.refs).
func (l *segLog) drop(seg *segment) error {
	l.segsMu.Lock()
	delete(l.segs, seg.seq)
	l.segsMu.Unlock()
	l.syncMu.Lock() // no fsync of it is in flight
	seg.release()
	l.syncMu.Unlock()
	if err := l.fs.Remove(seg.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if l.sync {
		return l.fs.SyncDir(l.dir)
	}
	return nil
}

// close gives back the log's reference on every segment file (closed
// now, or by the last Blob read from it).
func (l *segLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.segsMu.Lock()
	defer l.segsMu.Unlock()
	for _, s := range l.segs {
		s.release()
	}
	l.cur = nil
	l.err = ErrClosed
}
