package raftstore

import (
	"fmt"
	"maps"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/mure-dev/mure/internal/store/crashfs"
)

// logState is what a store holds: entries (index → term) and stable keys.
type logState struct {
	terms  map[uint64]uint64
	stable map[string]uint64
}

func (a logState) equal(b logState) bool {
	return maps.Equal(a.terms, b.terms) && maps.Equal(a.stable, b.stable)
}

func (a logState) String() string { return fmt.Sprintf("entries %v stable %v", a.terms, a.stable) }

// op is one call on a store and its effect on the model.
type op struct {
	name  string
	do    func(*Store) error
	model func(*logState)
}

func storeOp(from, to, term uint64) op {
	return op{fmt.Sprintf("store %d-%d/%d", from, to, term),
		func(s *Store) error { return s.StoreLogs(entries(from, to, term)) },
		func(m *logState) {
			for i := from; i <= to; i++ {
				m.terms[i] = term
			}
		}}
}

func deleteOp(lo, hi uint64) op {
	return op{fmt.Sprintf("delete %d-%d", lo, hi),
		func(s *Store) error { return s.DeleteRange(lo, hi) },
		func(m *logState) {
			for i := lo; i <= hi; i++ {
				delete(m.terms, i)
			}
		}}
}

func setOp(k string, v uint64) op {
	return op{fmt.Sprintf("set %s=%d", k, v),
		func(s *Store) error { return s.SetUint64([]byte(k), v) },
		func(m *logState) { m.stable[k] = v }}
}

// scenario covers appends, a conflicting suffix, head compaction (which
// deletes whole segments: they are 512 bytes), and the stable store.
var scenario = []op{
	setOp("CurrentTerm", 1), storeOp(1, 3, 1), storeOp(4, 8, 1), setOp("LastVoteTerm", 1),
	deleteOp(6, 8), storeOp(6, 9, 2), setOp("CurrentTerm", 2), storeOp(10, 20, 2),
	deleteOp(1, 12), storeOp(21, 22, 2), setOp("CurrentTerm", 3), deleteOp(13, 22), storeOp(40, 41, 3),
}

func readState(t *testing.T, s *Store) logState {
	t.Helper()
	st := logState{terms: map[uint64]uint64{}, stable: map[string]uint64{}}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	for i := first; i <= last && last > 0; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			t.Fatalf("get %d: %v", i, err)
		}
		st.terms[i] = l.Term
	}
	for _, k := range []string{"CurrentTerm", "LastVoteTerm"} {
		if v, err := s.GetUint64([]byte(k)); err == nil {
			st.stable[k] = v
		}
	}
	return st
}

// runUntilPowerLoss runs the scenario on a crashfs disk that loses power
// before its n-th mutating operation, then reopens the log on the disk
// as it came back. It returns what was acknowledged, what else the
// failed operation may have left, and what the store holds.
func runUntilPowerLoss(t *testing.T, n int, noSync bool) (acked, orInFlight, got logState, crashed bool) {
	// The disk's root is the log's parent: creating the log's directory
	// must be made durable too.
	root := t.TempDir()
	dir := filepath.Join(root, "log")
	disk, err := crashfs.New(root)
	must(t, err)
	opts := Options{FS: disk, NoSync: noSync, SegmentBytes: 512}
	s, err := Open(dir, opts)
	must(t, err)
	disk.CrashAfter(n)
	acked = logState{terms: map[uint64]uint64{}, stable: map[string]uint64{}}
	orInFlight = acked
	for _, o := range scenario {
		if err := o.do(s); err != nil {
			orInFlight = logState{terms: maps.Clone(acked.terms), stable: maps.Clone(acked.stable)}
			o.model(&orInFlight)
			crashed = true
			break
		}
		o.model(&acked)
	}
	back, err := disk.Crash()
	must(t, err)
	s.Close()
	s, err = Open(dir, Options{FS: back, SegmentBytes: 512})
	must(t, err)
	defer s.Close()
	return acked, orInFlight, readState(t, s), crashed
}

// TestPowerLossLog: the power goes before each mutating disk operation in
// turn; every write the store acknowledged is there after the restart.
// With NoSync the same test must find a lost write: the model drops what
// was not synced, so it would catch a missing sync in the store.
func TestPowerLossLog(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("nosync=%v", noSync), func(t *testing.T) {
			lost := 0
			for n := 1; ; n++ {
				acked, inFlight, got, crashed := runUntilPowerLoss(t, n, noSync)
				if !got.equal(acked) && !got.equal(inFlight) {
					lost++
					if !noSync {
						t.Errorf("power lost at operation %d: store holds %v; acknowledged %v", n, got, acked)
					}
				}
				if !crashed {
					t.Logf("%d crash points; %d lost acknowledged writes", n-1, lost)
					break
				}
			}
			if noSync && lost == 0 {
				t.Error("without fsync no acknowledged write was lost: the power-loss model does not see the log's syncs")
			}
		})
	}
}
