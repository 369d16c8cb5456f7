package store

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// openSegments opens the segments found in dir/segments, oldest first,
// and rebuilds the index of small blobs from their records: every record
// is read and checked whole; a record whose header does not check (a tail
// not synced before a power loss, or corruption) ends its segment; one
// whose content alone does not is a torn append if no record that checks
// follows it (dropped), else corruption: indexed and found corrupt when
// read (scanSegment). Later
// records win; a removal deletes. Appends go to a new segment, begun by
// the first of them.
func (s *Store) openSegments() error {
	dir := filepath.Join(s.dir, segmentsDir)
	if err := s.mkdirDurable(dir); err != nil {
		return err
	}
	s.log = &segLog{fs: s.fs, dir: dir, sync: s.sync, max: segmentMax, segs: map[uint64]*segment{}, next: 1}
	ents, err := s.fs.ReadDir(dir)
	if err != nil {
		return err
	}
	var seqs []uint64
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") { // a segment never begun
			if err := s.removeIfExists(filepath.Join(dir, name)); err != nil {
				return err
			}
			continue
		}
		hex, ok := strings.CutSuffix(name, ".seg")
		if seq, err := strconv.ParseUint(hex, 16, 64); ok && len(hex) == 16 && err == nil {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		name := segName(dir, seq)
		f, err := s.fs.Open(name)
		if err != nil {
			return err
		}
		seg := newSegment(seq, name, f)
		s.log.segs[seq] = seg
		s.log.next = seq + 1
		if err := s.scanSegment(seg); err != nil {
			return fmt.Errorf("scan %s: %w", seg.name, err)
		}
	}
	var nblobs, nbytes int64
	for i := range s.small {
		for _, es := range s.small[i] {
			for _, e := range es {
				nblobs++
				nbytes += e.bytes()
			}
		}
	}
	s.nblobs.Add(nblobs)
	s.nbytes.Add(nbytes)
	return nil
}

// scanSegment applies seg's records to the index, up to the first whose
// header does not check, and sets seg.size to the end of the last record
// applied.
//
// Records whose header checks but whose content does not wait in bad
// until a record that checks whole follows: then they are corruption,
// applied (found corrupt when read, counted, quarantined). If none
// follows, they are a torn append and are dropped: a writer is answered
// only after an fsync that began after its record was written (group
// commit reads the end of the log after the append; a seal fsyncs the
// whole segment), and that fsync made every earlier byte of the segment
// durable too. So a record at the tail whose content did not make it
// was never acknowledged, and neither was anything after it.
func (s *Store) scanSegment(seg *segment) error {
	fi, err := seg.f.Stat()
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(io.NewSectionReader(seg.f, 0, fi.Size()), 1<<20)
	var buf []byte
	type badRec struct {
		rec record
		n   int64
	}
	var bad []badRec
	for {
		rec, err := readRecord(br, &buf)
		if errors.Is(err, errBadData) {
			bad = append(bad, badRec{rec, int64(len(buf))})
			continue
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errBadRecord) {
			return nil // the end, or a tail that was never durable
		}
		if err != nil {
			return err
		}
		for _, b := range bad {
			if !s.indexed(&b.rec) {
				// A bad record does not hide an earlier one of the same
				// blob: it is most likely a commit of the same content
				// again (ids name one content) torn by a power loss,
				// its header on disk and part of its content not.
				s.applyRecord(&b.rec, seg, seg.size, true)
			}
			seg.size += b.n
		}
		bad = bad[:0]
		s.applyRecord(&rec, seg, seg.size, false)
		seg.size += int64(len(buf))
	}
}

// readRecord reads the next record from br into *buf (reused) and checks
// it.
func readRecord(br *bufio.Reader, buf *[]byte) (record, error) {
	h, err := br.Peek(recHeader)
	if err != nil {
		return record{}, err
	}
	rec, pathLen, idLen, err := decodeHeader(h)
	if err != nil {
		return rec, err
	}
	n := recHeader + pathLen + idLen + int(rec.size)
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	*buf = (*buf)[:n]
	if _, err := io.ReadFull(br, *buf); err != nil {
		return rec, err
	}
	rec, _, err = decodeRecord(*buf)
	return rec, err
}

// indexed reports whether rec's blob is in the index.
func (s *Store) indexed(rec *record) bool {
	_, ok := s.indexGet(s.locate(rec.path), rec.path, rec.id)
	return ok
}

// applyRecord applies one record found by a scan at off in seg; bad: its
// content did not check.
func (s *Store) applyRecord(rec *record, seg *segment, off int64, bad bool) {
	l := s.locate(rec.path)
	switch rec.kind {
	case recBlob:
		s.indexSet(l, rec.path, newEntry(rec.id, seg, off, rec.size).suspectIf(bad))
	case recRemoval:
		s.indexDel(l, rec.path, rec.id)
	}
}
