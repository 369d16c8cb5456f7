package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/mure-dev/mure/internal/store"
)

var errExist = fs.ErrExist

func segName(seq uint64) string { return fmt.Sprintf("seg-%016x.log", seq) }

// append writes records (already framed) at the end of the active
// segment, syncs them and applies them to the index. Called with wmu.
func (s *Store) append(buf []byte) error {
	if s.broken != nil {
		return fmt.Errorf("%w: %v", ErrBroken, s.broken)
	}
	if sg := s.active(); sg.size >= s.opts.SegmentBytes {
		if err := s.startSegment(); err != nil {
			return err
		}
	}
	sg := s.active()
	if !s.opts.NoSync {
		prealloc(sg.f, &sg.alloc, sg.size+int64(len(buf)), s.opts.SegmentBytes)
	}
	if _, err := sg.f.WriteAt(buf, sg.size); err != nil {
		s.broken = err
		return fmt.Errorf("raft log: write: %w", err)
	}
	if err := s.sync(sg.f); err != nil {
		s.broken = err
		return fmt.Errorf("raft log: sync: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	base := sg.size
	sg.size += int64(len(buf))
	sg.alloc = max(sg.alloc, sg.size)
	if n, err := s.apply(buf, sg, base); err != nil || n != len(buf) {
		s.broken = fmt.Errorf("apply own records: %d of %d bytes: %v", n, len(buf), err)
		return fmt.Errorf("raft log: %w", s.broken)
	}
	return nil
}

// sync makes f's content durable: fdatasync, which writes the size too
// when it changed; appends into the zeros written ahead of them
// (prealloc.go) leave it nothing else to write.
func (s *Store) sync(f store.File) error {
	if s.opts.NoSync {
		return nil
	}
	return store.Datasync(f)
}

func (s *Store) active() *segment { return s.segs[len(s.segs)-1] }

// startSegment creates the next segment, holding a copy of the stable
// store (so older segments can go without losing it), and makes it the
// active one. Called with wmu.
func (s *Store) startSegment() error {
	var seq uint64 = 1
	if len(s.segs) > 0 {
		seq = s.active().seq + 1
	}
	buf := append([]byte(segMagic), binary.BigEndian.AppendUint64(nil, seq)...)
	s.mu.RLock()
	for k, v := range s.stable {
		buf = appendRecord(buf, kindSet, setBody([]byte(k), v))
	}
	s.mu.RUnlock()
	f, err := s.fs.CreateTemp(s.dir, "seg-*.tmp")
	if err != nil {
		return fmt.Errorf("raft log: new segment: %w", err)
	}
	name := filepath.Join(s.dir, segName(seq))
	err = func() error {
		if _, err := f.Write(buf); err != nil {
			return err
		}
		if err := s.sync(f); err != nil {
			return err
		}
		if err := s.fs.Rename(f.Name(), name); err != nil {
			return err
		}
		if s.opts.NoSync {
			return nil
		}
		return s.fs.SyncDir(s.dir)
	}()
	if err != nil {
		f.Close()
		s.fs.Remove(f.Name())
		return fmt.Errorf("raft log: new segment %s: %w", name, err)
	}
	s.mu.Lock()
	s.segs = append(s.segs, &segment{seq: seq, f: f, size: int64(len(buf)), alloc: int64(len(buf))})
	s.mu.Unlock()
	return nil
}

// dropDeadSegments deletes the oldest segments while none of their
// entries is in the index any more. Only from the front: replay then
// never meets a record that depends on a deleted segment's entries.
// Called with wmu.
func (s *Store) dropDeadSegments() error {
	for {
		s.mu.Lock()
		if len(s.segs) < 2 || s.segs[0].live > 0 {
			s.mu.Unlock()
			return nil
		}
		sg := s.segs[0]
		s.segs = s.segs[1:]
		s.mu.Unlock()
		sg.f.Close()
		if err := s.fs.Remove(filepath.Join(s.dir, segName(sg.seq))); err != nil {
			return fmt.Errorf("raft log: remove old segment: %w", err)
		}
	}
}

// ensureDir creates the log's directory, durably, if it is missing.
func (s *Store) ensureDir() error {
	if _, err := s.fs.Lstat(s.dir); err == nil {
		return nil
	}
	if err := s.fs.Mkdir(s.dir, 0o700); err != nil && !errors.Is(err, errExist) {
		return err
	}
	if s.opts.NoSync {
		return nil
	}
	return s.fs.SyncDir(filepath.Dir(s.dir))
}

// replay reads every segment in order into the index. A segment's
// records end at the first one cut short or failing its checksum.
func (s *Store) replay() error {
	ents, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return err
	}
	var seqs []uint64
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".tmp"):
			if err := s.fs.Remove(filepath.Join(s.dir, name)); err != nil {
				return err
			}
		case strings.HasPrefix(name, "seg-") && strings.HasSuffix(name, ".log"):
			seq, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, "seg-"), ".log"), 16, 64)
			if err != nil {
				return fmt.Errorf("%s: %w", name, ErrCorrupt)
			}
			seqs = append(seqs, seq)
		}
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	for _, seq := range seqs {
		if err := s.replaySegment(seq); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) replaySegment(seq uint64) error {
	name := filepath.Join(s.dir, segName(seq))
	f, err := s.fs.Open(name)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) < segHeader || string(b[:len(segMagic)]) != segMagic || binary.BigEndian.Uint64(b[len(segMagic):]) != seq {
		f.Close()
		return fmt.Errorf("%s: bad header: %w", name, ErrCorrupt)
	}
	sg := &segment{seq: seq, f: f, size: int64(len(b))}
	s.segs = append(s.segs, sg)
	_, err = s.apply(b[segHeader:], sg, int64(segHeader))
	return err
}

// apply applies the framed records in b, which lie at offset base of
// segment sg, to the index and the stable store. It stops at the first
// incomplete or damaged frame and says how many bytes it applied. Called
// with mu held (or before the store is shared).
func (s *Store) apply(b []byte, sg *segment, base int64) (int, error) {
	pos := 0
	for len(b)-pos >= recHeader {
		n := int(binary.BigEndian.Uint32(b[pos:]))
		sum := binary.BigEndian.Uint32(b[pos+4:])
		if n < 1 || n > maxRecord || n > len(b)-pos-recHeader {
			break
		}
		p := b[pos+recHeader : pos+recHeader+n]
		if crc32.Checksum(p, castagnoli) != sum {
			break
		}
		if err := s.applyRecord(p, loc{seg: sg, off: base + int64(pos+recHeader), n: n}); err != nil {
			return pos, err
		}
		pos += recHeader + n
	}
	return pos, nil
}

func (s *Store) applyRecord(p []byte, at loc) error {
	body := p[1:]
	switch p[0] {
	case kindEntry:
		if len(body) < 8 {
			return fmt.Errorf("short entry: %w", ErrCorrupt)
		}
		index := binary.BigEndian.Uint64(body)
		if len(s.locs) == 0 {
			s.first = index
		} else if index != s.first+uint64(len(s.locs)) {
			return fmt.Errorf("entry %d after %d: %w", index, s.first+uint64(len(s.locs))-1, ErrCorrupt)
		}
		s.locs = append(s.locs, at)
		at.seg.live++
	case kindDelete:
		if len(body) != 16 {
			return fmt.Errorf("bad delete: %w", ErrCorrupt)
		}
		return s.deleteRange(binary.BigEndian.Uint64(body), binary.BigEndian.Uint64(body[8:]))
	case kindSet:
		k, v, ok := parseSet(body)
		if !ok {
			return fmt.Errorf("bad stable key: %w", ErrCorrupt)
		}
		s.stable[string(k)] = append([]byte(nil), v...)
	default:
		return fmt.Errorf("record kind %d: %w", p[0], ErrCorrupt)
	}
	return nil
}

// clampDelete is the part of [lo, hi] the index holds; it must cover
// the index's start or its end (raft deletes a compacted prefix, a
// conflicting suffix, or everything). ok is false when nothing is held.
func (s *Store) clampDelete(lo, hi uint64) (uint64, uint64, bool, error) {
	if len(s.locs) == 0 {
		return 0, 0, false, nil
	}
	last := s.first + uint64(len(s.locs)) - 1
	if hi < s.first || lo > last || lo > hi {
		return 0, 0, false, nil
	}
	lo, hi = max(lo, s.first), min(hi, last)
	if lo != s.first && hi != last {
		return 0, 0, false, fmt.Errorf("delete %d-%d inside %d-%d: %w", lo, hi, s.first, last, ErrCorrupt)
	}
	return lo, hi, true, nil
}

// deleteRange drops [lo, hi] from the index (see clampDelete).
func (s *Store) deleteRange(lo, hi uint64) error {
	lo, hi, ok, err := s.clampDelete(lo, hi)
	if !ok {
		return err
	}
	for _, l := range s.locs[lo-s.first : hi-s.first+1] {
		l.seg.live--
	}
	if lo == s.first {
		s.locs = append([]loc(nil), s.locs[hi-s.first+1:]...)
		s.first = hi + 1
	} else {
		s.locs = s.locs[:lo-s.first]
	}
	return nil
}
