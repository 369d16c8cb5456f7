package raftstore

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func openT(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLogRoundTripAndRanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s := openT(t, path)
	at := time.Unix(1700000000, 123)
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1 + i/5, Type: raft.LogCommand, Data: []byte{byte(i)}, Extensions: []byte("x"), AppendedAt: at})
	}
	logs[3].Data = nil
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	// Tail truncation (a deposed leader's uncommitted entries), then more
	// appends and a "crash" (no Close): everything must read back.
	if err := s.DeleteRange(8, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLog(&raft.Log{Index: 8, Term: 3, Type: raft.LogNoop}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 2); err != nil { // head compaction
		t.Fatal(err)
	}
	s.db.Close() // the file as a killed process leaves it: committed transactions only
	s = openT(t, path)
	defer s.Close()
	tests := []struct {
		name string
		got  func() (uint64, error)
		want uint64
	}{
		{"first", s.FirstIndex, 3},
		{"last", s.LastIndex, 8},
	}
	for _, tc := range tests {
		if v, err := tc.got(); err != nil || v != tc.want {
			t.Errorf("%s index = %d, %v; want %d", tc.name, v, err, tc.want)
		}
	}
	for i := uint64(3); i <= 7; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			t.Fatalf("get %d: %v", i, err)
		}
		w := logs[i-1]
		if l.Index != w.Index || l.Term != w.Term || l.Type != w.Type || !bytes.Equal(l.Data, w.Data) || !bytes.Equal(l.Extensions, w.Extensions) || !l.AppendedAt.Equal(at) {
			t.Fatalf("log %d = %+v, want %+v", i, l, w)
		}
	}
	var l raft.Log
	if err := s.GetLog(8, &l); err != nil || l.Term != 3 || l.Type != raft.LogNoop {
		t.Fatalf("rewritten tail: %+v %v", l, err)
	}
	if err := s.GetLog(9, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("truncated entry: %v, want ErrLogNotFound", err)
	}
}

func TestStableStore(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "raft.db"))
	defer s.Close()
	if _, err := s.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v, want raft's \"not found\"", err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 42); err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 42 {
		t.Fatalf("GetUint64 = %d, %v", v, err)
	}
	if err := s.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if _, err := s.GetUint64([]byte("k")); err == nil {
		t.Fatal("GetUint64 of a 1-byte value must fail")
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, make([]byte, 28), append(make([]byte, 25), 0, 0, 0, 9)} {
		var l raft.Log
		if err := decode(b, &l); err == nil {
			t.Errorf("decode(%x) accepted garbage", b)
		}
	}
}
