package raftstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func openT(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func entries(from, to, term uint64) []*raft.Log {
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("e%d-t%d", i, term))})
	}
	return logs
}

// checkLog asserts the store holds exactly entries first..last, each the
// one written with the given term (terms[i] for index i, default 1).
func checkLog(t *testing.T, s *Store, first, last uint64, terms map[uint64]uint64) {
	t.Helper()
	f, _ := s.FirstIndex()
	l, _ := s.LastIndex()
	if f != first || l != last {
		t.Fatalf("log holds %d-%d, want %d-%d", f, l, first, last)
	}
	for i := first; i <= last && last > 0; i++ {
		term := terms[i]
		if term == 0 {
			term = 1
		}
		var e raft.Log
		if err := s.GetLog(i, &e); err != nil {
			t.Fatalf("get %d: %v", i, err)
		}
		if want := fmt.Sprintf("e%d-t%d", i, term); e.Index != i || e.Term != term || string(e.Data) != want {
			t.Fatalf("entry %d = %d/%d %q, want term %d %q", i, e.Index, e.Term, e.Data, term, want)
		}
	}
	var e raft.Log
	if err := s.GetLog(last+1, &e); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("entry past the end: %v", err)
	}
}

func TestLogRoundTripAndRanges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	s := openT(t, dir, Options{})
	at := time.Unix(1700000000, 123)
	logs := entries(1, 10, 1)
	for _, l := range logs {
		l.Extensions, l.AppendedAt = []byte("x"), at
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := s.GetLog(4, &l); err != nil || string(l.Data) != "e4-t1" || string(l.Extensions) != "x" || !l.AppendedAt.Equal(at) {
		t.Fatalf("entry 4 = %+v, %v", l, err)
	}
	// Tail truncation (a deposed leader's uncommitted entries), more
	// appends, head compaction, then a restart.
	must(t, s.DeleteRange(8, 10))
	must(t, s.StoreLogs(entries(8, 9, 3)))
	must(t, s.DeleteRange(1, 2))
	if err := s.DeleteRange(4, 5); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("deleting a hole: %v, want ErrCorrupt", err)
	}
	if err := s.StoreLogs(entries(12, 12, 3)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("storing past a gap: %v, want ErrCorrupt", err)
	}
	s.Close()
	s = openT(t, dir, Options{})
	checkLog(t, s, 3, 9, map[uint64]uint64{8: 3, 9: 3})
	// Everything deleted (a snapshot installed), then a new start.
	must(t, s.DeleteRange(0, 100))
	checkLog(t, s, 0, 0, nil)
	must(t, s.StoreLogs(entries(500, 502, 4)))
	s.Close()
	s = openT(t, dir, Options{})
	checkLog(t, s, 500, 502, map[uint64]uint64{500: 4, 501: 4, 502: 4})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestStableStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	s := openT(t, dir, Options{})
	if _, err := s.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v, want raft's \"not found\"", err)
	}
	must(t, s.SetUint64([]byte("CurrentTerm"), 41))
	must(t, s.SetUint64([]byte("CurrentTerm"), 42))
	must(t, s.Set([]byte("k"), []byte("v")))
	for round := range 2 {
		if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 42 {
			t.Fatalf("round %d: GetUint64 = %d, %v", round, v, err)
		}
		if v, err := s.Get([]byte("k")); err != nil || string(v) != "v" {
			t.Fatalf("round %d: Get = %q, %v", round, v, err)
		}
		if _, err := s.GetUint64([]byte("k")); err == nil {
			t.Fatal("GetUint64 of a 1-byte value must fail")
		}
		s.Close()
		s = openT(t, dir, Options{})
	}
}

// TestSegmentsRotateAndCompact: small segments; compaction deletes the
// old ones, and what they held of the stable store survives.
func TestSegmentsRotateAndCompact(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	opts := Options{SegmentBytes: 1024}
	s := openT(t, dir, opts)
	must(t, s.SetUint64([]byte("CurrentTerm"), 7))
	for i := uint64(1); i <= 400; i += 10 {
		must(t, s.StoreLogs(entries(i, i+9, 1)))
	}
	before := segments(t, dir)
	if before < 5 {
		t.Fatalf("%d segments for 400 entries of 1 KiB segments", before)
	}
	must(t, s.DeleteRange(1, 350))
	after := segments(t, dir)
	if after >= before/2 {
		t.Fatalf("%d segments after compacting 350 of 400 entries (%d before)", after, before)
	}
	s.Close()
	s = openT(t, dir, opts)
	checkLog(t, s, 351, 400, nil)
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 7 {
		t.Fatalf("stable key after its segment went: %d, %v", v, err)
	}
}

func segments(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			n++
		}
	}
	return n
}

// TestTornTail: a record cut short, zeroed or damaged ends its segment;
// the records before it are kept, and the store appends after a restart.
// The segment's records end before the zeros written ahead of them
// (prealloc.go).
func TestTornTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		tear func(b []byte, end int) []byte
	}{
		{"cut 1", func(b []byte, end int) []byte { return b[:end-1] }},
		{"cut 5", func(b []byte, end int) []byte { return b[:end-5] }},
		{"cut 9", func(b []byte, end int) []byte { return b[:end-9] }},
		{"zeroed 9", func(b []byte, end int) []byte { clear(b[end-9 : end]); return b }},
		{"damaged", func(b []byte, end int) []byte { b[end-3] ^= 0xff; return b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			s := openT(t, dir, Options{})
			must(t, s.StoreLogs(entries(1, 5, 1)))
			must(t, s.StoreLogs(entries(6, 6, 1)))
			end := int(s.active().size)
			s.Close()
			name := filepath.Join(dir, segName(1))
			b, err := os.ReadFile(name)
			must(t, err)
			if len(b) <= end {
				t.Fatalf("segment of %d bytes for %d of records: no zeros written ahead", len(b), end)
			}
			must(t, os.WriteFile(name, tc.tear(b, end), 0o600))
			s = openT(t, dir, Options{})
			checkLog(t, s, 1, 5, nil)
			must(t, s.StoreLogs(entries(6, 7, 2)))
			s.Close()
			s = openT(t, dir, Options{})
			checkLog(t, s, 1, 7, map[uint64]uint64{6: 2, 7: 2})
		})
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, make([]byte, 28), append(make([]byte, 25), 0, 0, 0, 9)} {
		var l raft.Log
		if err := decode(b, &l); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode(%x) = %v, want ErrCorrupt", b, err)
		}
	}
}

func TestLockedDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	openT(t, dir, Options{})
	if s, err := Open(dir, Options{}); err == nil {
		s.Close()
		t.Fatal("a second store opened the same directory")
	}
}
