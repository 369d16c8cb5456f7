package store

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"time"
)

// Compaction (decision 0037): once a sealed segment is less than half
// live, its live records are appended again to the current segment and
// the file is deleted. One worker, owned by the Store, does it in the
// background.

// deadened accounts n bytes of seg that no longer hold a live blob.
func (s *Store) deadened(seg *segment, n int64) {
	s.maybeCompact(seg, seg.live.Add(-n))
}

// maybeCompact queues seg for compaction if it is sealed and less than
// half live, or empty (begun before a power loss, or ended by a failed
// write): its file goes. The queue holds each segment at most once
// (queued), so it is bounded by the number of segments.
func (s *Store) maybeCompact(seg *segment, live int64) {
	if !s.compacting.Load() || !seg.sealed.Load() || (seg.size > 0 && live*2 >= seg.size) || seg.queued.Swap(true) {
		return
	}
	s.compactMu.Lock()
	s.compactQ = append(s.compactQ, seg)
	s.compactMu.Unlock()
	select {
	case s.compactWake <- struct{}{}:
	default:
	}
}

// startCompaction starts the worker, once Open has scanned the segments,
// and queues those already worth compacting.
func (s *Store) startCompaction() {
	s.compactWake = make(chan struct{}, 1)
	s.compactStop = make(chan struct{})
	s.compactDone = make(chan struct{})
	s.compacting.Store(true)
	go s.compactLoop()
	s.log.segsMu.RLock()
	segs := make([]*segment, 0, len(s.log.segs))
	for _, seg := range s.log.segs {
		segs = append(segs, seg)
	}
	s.log.segsMu.RUnlock()
	for _, seg := range segs {
		seg.sealed.Store(true)
		s.maybeCompact(seg, seg.live.Load())
	}
}

// stopCompaction stops the worker and waits for it.
func (s *Store) stopCompaction() {
	if s.compacting.Swap(false) {
		close(s.compactStop)
		<-s.compactDone
	}
}

// Compaction that failed is tried again after a pause that doubles from
// compactRetryMin up to compactRetryMax (the segment stays queued, and
// its file stays, meanwhile).
const (
	compactRetryMin = 100 * time.Millisecond
	compactRetryMax = time.Minute
)

func (s *Store) compactLoop() {
	defer close(s.compactDone)
	var failed []*segment
	backoff := compactRetryMin
	retry := time.NewTimer(0)
	<-retry.C
	defer retry.Stop()
	for {
		seg := s.nextToCompact()
		if seg == nil {
			select {
			case <-s.compactStop:
				return
			case <-s.compactWake:
			case <-retry.C:
				s.compactMu.Lock()
				s.compactQ = append(s.compactQ, failed...)
				s.compactMu.Unlock()
				failed = nil
			}
			continue
		}
		err := s.compact(seg)
		switch {
		case errors.Is(err, errStopped):
			return
		case err != nil:
			s.stats.compactErrors.Add(1)
			if len(failed) == 0 {
				retry.Reset(backoff)
				backoff = min(2*backoff, compactRetryMax)
			}
			failed = append(failed, seg)
		default:
			backoff = compactRetryMin
		}
	}
}

// nextToCompact takes the first queued segment, or nil.
func (s *Store) nextToCompact() *segment {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	if len(s.compactQ) == 0 {
		return nil
	}
	seg := s.compactQ[0]
	s.compactQ = s.compactQ[1:]
	return seg
}

var errStopped = errors.New("store: compaction stopped")

// compact moves seg's live records to the current segment and deletes it.
// A blob is copied under its stripe's lock, after checking that the index
// still points at this record, so that no removal or newer commit of it
// can be ordered before the copy. Removal records are copied too unless
// seg is the oldest segment: a blob they removed may sit in an older one.
func (s *Store) compact(seg *segment) error {
	if s.log.get(seg.seq) != seg {
		return nil
	}
	oldest := s.log.oldest(seg)
	br := bufio.NewReaderSize(io.NewSectionReader(seg.f, 0, seg.size), 1<<20)
	var buf []byte
	var off int64
	for off < seg.size {
		select {
		case <-s.compactStop:
			return errStopped
		default:
		}
		rec, err := readRecord(br, &buf)
		if err != nil && !errors.Is(err, errBadData) { // bad content moves as it is
			return fmt.Errorf("compact %s at %d: %w", seg.name, off, err)
		}
		if err := s.moveRecord(seg, off, &rec, buf, oldest, err != nil); err != nil {
			return err
		}
		off += int64(len(buf))
	}
	// Not only the copies must be durable before seg goes, but every
	// record appended so far: a replacement or removal that made one of
	// seg's records dead may still wait for its fsync, and without seg a
	// power loss would then lose both the old record and the new.
	if err := s.log.waitDurable(s.log.end()); err != nil {
		return err
	}
	if n := seg.live.Load(); n != 0 {
		return fmt.Errorf("compact %s: %d bytes still live", seg.name, n)
	}
	s.stats.compactions.Add(1)
	return s.log.drop(seg)
}

// moveRecord appends rec (raw: buf), found at off in seg, to the current
// segment if it must outlive seg. bad: its content did not check (it
// moves as it is, marked suspect, and its next read finds it corrupt).
func (s *Store) moveRecord(seg *segment, off int64, rec *record, buf []byte, oldest, bad bool) error {
	l := s.locate(rec.path)
	mu := &s.stripes[l.stripe]
	mu.Lock()
	defer mu.Unlock()
	switch {
	case rec.kind == recBlob:
		e, ok := s.indexGet(l, rec.path, rec.id)
		if !ok || e.seg != seg || e.offset() != off {
			return nil
		}
		to, toOff, _, err := s.log.append(buf)
		if err != nil {
			return err
		}
		s.indexSet(l, rec.path, newEntry(rec.id, to, toOff, rec.size).suspectIf(bad))
	case rec.kind == recRemoval && !oldest:
		if _, live := s.indexGet(l, rec.path, rec.id); live {
			return nil // committed again since: copied, it would remove that
		}
		if _, _, _, err := s.log.append(buf); err != nil {
			return err
		}
	}
	return nil
}
