package meta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// fsmApply applies c at idx through raft's interface.
func fsmApply(t testing.TB, m *FSM, idx uint64, c Command) *Result {
	t.Helper()
	data, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	out := m.Apply(&raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: data})
	r, ok := out.(*Result)
	if !ok {
		t.Fatalf("Apply returned %T, want *Result", out)
	}
	if r.Index != idx {
		t.Fatalf("Result.Index = %d, want %d", r.Index, idx)
	}
	return r
}

func fsmNode(id string) Command {
	return Command{Kind: KindNodeUpsert, Info: &Node{ID: id, PeerAddr: id + ":1", HTTPAddr: id + ":2", State: NodeActive, Since: testTime}}
}

// bufSink is an in-memory raft.SnapshotSink.
type bufSink struct {
	bytes.Buffer
	closed, cancelled bool
	failWrite         bool
}

func (s *bufSink) Write(p []byte) (int, error) {
	if s.failWrite {
		return 0, errors.New("disk full")
	}
	return s.Buffer.Write(p)
}
func (s *bufSink) ID() string            { return "test" }
func (s *bufSink) Close() error          { s.closed = true; return nil }
func (s *bufSink) Cancel() error         { s.cancelled = true; return nil }
func (s *bufSink) reader() io.ReadCloser { return io.NopCloser(bytes.NewReader(s.Bytes())) }

var _ raft.SnapshotSink = (*bufSink)(nil)

func TestFSMApply(t *testing.T) {
	m := NewFSM()
	if m.Applied() != 0 {
		t.Fatalf("Applied = %d", m.Applied())
	}
	steps := []struct {
		name    string
		idx     uint64
		cmd     Command
		wantErr error
		check   func(t *testing.T, r *Result)
	}{
		{"node a", 1, fsmNode("a"), nil, nil},
		{"node b", 2, fsmNode("b"), nil, nil},
		{"acquire", 3, Command{Kind: KindAcquire, Path: "x", Node: "a"}, nil, func(t *testing.T, r *Result) {
			if r.File.Grant != 3 || r.File.Holder != "a" {
				t.Fatalf("File = %+v", r.File)
			}
		}},
		{"held", 4, Command{Kind: KindAcquire, Path: "x", Node: "b"}, ErrHeld, func(t *testing.T, r *Result) {
			if r.File == nil || r.File.Holder != "a" {
				t.Fatalf("File = %+v, want holder a", r.File)
			}
		}},
		{"commit", 5, Command{Kind: KindCommit, Path: "x", Node: "a", Grant: 3, Standby: []string{"b"}, Time: testTime}, nil, func(t *testing.T, r *Result) {
			if r.File.Version != 5 || !slices.Equal(r.File.Valid, []string{"a", "b"}) {
				t.Fatalf("File = %+v", r.File)
			}
		}},
		{"stale grant", 6, Command{Kind: KindCommit, Path: "x", Node: "a", Grant: 2}, ErrNotHolder, nil},
		{"unknown kind", 7, Command{Kind: "zap"}, ErrBadCommand, nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			r := fsmApply(t, m, st.idx, st.cmd)
			if !errors.Is(r.Err, st.wantErr) || (st.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("err = %v, want %v", r.Err, st.wantErr)
			}
			if st.check != nil {
				st.check(t, r)
			}
			if m.Applied() != st.idx {
				t.Fatalf("Applied = %d, want %d", m.Applied(), st.idx)
			}
		})
	}
	if f := m.File("x"); f == nil || f.Version != 5 {
		t.Fatalf("File(x) = %+v", f)
	}
	m.Read(func(s *State) {
		if l, sp := s.Counts(); l != 1 || sp != 1 {
			t.Fatalf("Counts = %d,%d", l, sp)
		}
	})
}

func TestFSMApplyUndecodable(t *testing.T) {
	m := NewFSM()
	for i, data := range [][]byte{nil, []byte("{"), []byte(`{"kind":1}`), []byte("\x00\x01")} {
		idx := uint64(i + 1)
		out := m.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: data})
		r, ok := out.(*Result)
		if !ok || !errors.Is(r.Err, ErrBadCommand) || r.Index != idx {
			t.Fatalf("Apply(%q) = %#v", data, out)
		}
		if m.Applied() != idx {
			t.Fatalf("Applied = %d, want %d", m.Applied(), idx)
		}
	}
	if paths, rescan := m.DrainChanges(); len(paths) != 0 || rescan {
		t.Fatalf("DrainChanges = %v, %v", paths, rescan)
	}
}

func TestFSMApplyNonCommandLogs(t *testing.T) {
	for _, typ := range []raft.LogType{raft.LogNoop, raft.LogConfiguration, raft.LogBarrier} {
		t.Run(typ.String(), func(t *testing.T) {
			m := NewFSM()
			ch := m.Changed()
			if out := m.Apply(&raft.Log{Index: 9, Type: typ, Data: []byte("{}")}); out != nil {
				t.Fatalf("Apply = %#v, want nil", out)
			}
			if m.Applied() != 9 {
				t.Fatalf("Applied = %d", m.Applied())
			}
			select {
			case <-ch:
			default:
				t.Fatal("Changed channel not closed")
			}
		})
	}
}

func TestFSMChanged(t *testing.T) {
	m := NewFSM()
	ch := m.Changed()
	select {
	case <-ch:
		t.Fatal("closed before any apply")
	default:
	}
	fsmApply(t, m, 1, fsmNode("a"))
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("not closed after apply")
	}
	ch2 := m.Changed()
	if ch2 == ch {
		t.Fatal("Changed did not return a fresh channel")
	}
	select {
	case <-ch2:
		t.Fatal("new channel already closed")
	default:
	}
}

func TestFSMWaitApplied(t *testing.T) {
	t.Run("already applied", func(t *testing.T) {
		m := NewFSM()
		fsmApply(t, m, 1, fsmNode("a"))
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // must not matter
		for _, idx := range []uint64{0, 1} {
			if err := m.WaitApplied(ctx, idx); err != nil {
				t.Fatalf("WaitApplied(%d) = %v", idx, err)
			}
		}
	})
	t.Run("waits for later index", func(t *testing.T) {
		m := NewFSM()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- m.WaitApplied(ctx, 3) }()
		for i := uint64(1); i <= 3; i++ {
			select {
			case err := <-done:
				t.Fatalf("returned %v before index 3 was applied (at %d)", err, m.Applied())
			case <-time.After(10 * time.Millisecond):
			}
			fsmApply(t, m, i, fsmNode(fmt.Sprint("n", i)))
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("WaitApplied = %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("WaitApplied did not return after index 3 was applied")
		}
	})
	t.Run("skipped index", func(t *testing.T) {
		m := NewFSM()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- m.WaitApplied(ctx, 5) }()
		m.Apply(&raft.Log{Index: 7, Type: raft.LogNoop})
		if err := <-done; err != nil {
			t.Fatalf("WaitApplied = %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		m := NewFSM()
		fsmApply(t, m, 1, fsmNode("a"))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := m.WaitApplied(ctx, 2)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitApplied = %v, want DeadlineExceeded", err)
		}
		if time.Since(start) < 25*time.Millisecond {
			t.Fatal("returned before the deadline")
		}
	})
	t.Run("cancel while applies continue", func(t *testing.T) {
		m := NewFSM()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- m.WaitApplied(ctx, 1000) }()
		for i := uint64(1); i <= 20; i++ {
			fsmApply(t, m, i, Command{Kind: KindSetConfig, Key: CfgResumeReads, Value: "4"})
		}
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("WaitApplied = %v, want Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("WaitApplied ignored cancellation")
		}
	})
}

func TestFSMDrainChanges(t *testing.T) {
	m := NewFSM()
	fsmApply(t, m, 1, fsmNode("a"))
	fsmApply(t, m, 2, fsmNode("b"))
	steps := []struct {
		name       string
		cmds       []Command
		wantPaths  []string
		wantRescan bool
	}{
		{"node upserts", nil, nil, true},
		{"nothing since", nil, nil, false},
		{"file commands", []Command{
			{Kind: KindAcquire, Path: "x", Node: "a"},
			{Kind: KindAcquire, Path: "y/z", Node: "b"},
			{Kind: KindAcquire, Path: "x", Node: "a"},
		}, []string{"x", "y/z"}, false},
		{"refused command on a path", []Command{{Kind: KindDelete, Path: "nope", Node: "a"}}, []string{"nope"}, false},
		{"set config", []Command{{Kind: KindSetConfig, Key: CfgReplication, Value: "2"}}, nil, true},
		{"node remove and a path", []Command{
			{Kind: KindNodeRemove, Node: "b"},
			{Kind: KindAcquire, Path: "w", Node: "a"},
		}, []string{"w"}, true},
	}
	idx := uint64(2)
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			for _, c := range st.cmds {
				idx++
				fsmApply(t, m, idx, c)
			}
			paths, rescan := m.DrainChanges()
			slices.Sort(paths)
			if !slices.Equal(paths, st.wantPaths) || rescan != st.wantRescan {
				t.Fatalf("DrainChanges = %v, %v; want %v, %v", paths, rescan, st.wantPaths, st.wantRescan)
			}
			if p, r := m.DrainChanges(); len(p) != 0 || r {
				t.Fatalf("second DrainChanges = %v, %v; want nothing", p, r)
			}
		})
	}
}

// buildRandomFSM applies a random but valid-ish history and returns the
// FSM and the last index.
func buildRandomFSM(t *testing.T, seed uint64) (*FSM, uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	m := NewFSM()
	idx := uint64(0)
	apply := func(c Command) *Result { idx++; return fsmApply(t, m, idx, c) }
	nodes := []string{"a", "b", "c", "d"}
	for _, n := range nodes {
		apply(fsmNode(n))
	}
	apply(Command{Kind: KindSetConfig, Key: CfgReplication, Value: "2"})
	apply(Command{Kind: KindSetConfig, Key: CfgResume, Value: "reads"})
	for i := 0; i < 200; i++ {
		p := fmt.Sprintf("dir%d/f%d", rng.IntN(3), rng.IntN(15))
		n := nodes[rng.IntN(3)] // d gets removed later
		cur := m.File(p)
		switch rng.IntN(6) {
		case 0, 1:
			r := apply(Command{Kind: KindAcquire, Path: p, Node: n, Force: rng.IntN(3) == 0})
			if r.Err == nil {
				apply(Command{Kind: KindCommit, Path: p, Node: n, Grant: r.File.Grant, Standby: []string{nodes[rng.IntN(4)]},
					BlobID: fmt.Sprint("blob", idx), Size: int64(rng.IntN(1000)), Sum: sumOf("s"), Time: testTime.Add(time.Duration(idx) * time.Second),
					Idem: fmt.Sprint("k", idx)})
			}
		case 2:
			if cur != nil && cur.Holder != "" {
				apply(Command{Kind: KindRelease, Path: p, Node: cur.Holder, Grant: cur.Grant})
			}
		case 3:
			if cur != nil {
				apply(Command{Kind: KindReplica, Path: p, Node: nodes[rng.IntN(4)], Version: cur.Version})
			}
		case 4:
			apply(Command{Kind: KindDelete, Path: p, Node: n, Force: true, Time: testTime})
		case 5:
			apply(Command{Kind: KindAcquire, Path: p, Node: n})
		}
		if i == 150 {
			apply(Command{Kind: KindNodeRemove, Node: "d", Time: testTime})
			apply(Command{Kind: KindNodeUpsert, Info: &Node{ID: "c", State: NodeLeft, Since: testTime}})
		}
	}
	return m, idx
}

// normFile makes a record comparable after a JSON round trip (empty and
// nil slices are the same; times compared with Equal).
func normFile(t *testing.T, f *File) File {
	t.Helper()
	c := *f.clone()
	if len(c.Valid) == 0 {
		c.Valid = nil
	}
	c.Modified = StampOf(c.Modified.Time())
	return c
}

func stateDump(t *testing.T, m *FSM) (files []File, nodes []Node, cfg map[string]string, live, susp int, applied uint64) {
	t.Helper()
	m.Read(func(s *State) {
		s.Walk(func(f *File) bool { files = append(files, normFile(t, f)); return true })
		nodes = s.Nodes()
		for i := range nodes {
			nodes[i].Since = nodes[i].Since.UTC()
		}
		cfg = s.Config()
		live, susp = s.Counts()
	})
	return files, nodes, cfg, live, susp, m.Applied()
}

func snapshotTo(t *testing.T, m *FSM) *bufSink {
	t.Helper()
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	sink := &bufSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed=%v cancelled=%v", sink.closed, sink.cancelled)
	}
	return sink
}

func TestFSMSnapshotRestore(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			m, last := buildRandomFSM(t, seed)
			sink := snapshotTo(t, m)

			m2 := NewFSM()
			ch := m2.Changed()
			if err := m2.Restore(sink.reader()); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ch:
			default:
				t.Fatal("Restore did not notify waiters")
			}
			f1, n1, c1, l1, s1, a1 := stateDump(t, m)
			f2, n2, c2, l2, s2, a2 := stateDump(t, m2)
			if a1 != last || a2 != last {
				t.Fatalf("Applied = %d / restored %d, want %d", a1, a2, last)
			}
			if len(f1) == 0 || len(n1) != 4 {
				t.Fatalf("history too small: %d files, %d nodes", len(f1), len(n1))
			}
			if !reflect.DeepEqual(f1, f2) {
				for i := range min(len(f1), len(f2)) {
					if !reflect.DeepEqual(f1[i], f2[i]) {
						t.Fatalf("file %d differs:\n%+v\n%+v", i, f1[i], f2[i])
					}
				}
				t.Fatalf("files differ: %d vs %d records", len(f1), len(f2))
			}
			if !reflect.DeepEqual(n1, n2) {
				t.Fatalf("nodes differ:\n%+v\n%+v", n1, n2)
			}
			if !mapsEqual(c1, c2) || c2[CfgReplication] != "2" || c2[CfgResume] != "reads" {
				t.Fatalf("config differs: %v vs %v", c1, c2)
			}
			if l1 != l2 || s1 != s2 {
				t.Fatalf("counts (%d,%d) restored as (%d,%d)", l1, s1, l2, s2)
			}
			m2.Read(func(s *State) { checkCounts(t, s) })
			if _, rescan := m2.DrainChanges(); !rescan {
				t.Fatal("Restore must ask for a rescan")
			}
			if err := m2.WaitApplied(context.Background(), last); err != nil {
				t.Fatal(err)
			}

			// The restored machine goes on identically.
			next := []Command{
				fsmNode("e"),
				{Kind: KindAcquire, Path: "dir0/new", Node: "e"},
				{Kind: KindCommit, Path: "dir0/new", Node: "e", Grant: last + 2, Standby: []string{"a"}},
				{Kind: KindDelete, Path: f1[0].Path, Node: "a", Force: true},
			}
			for i, c := range next {
				r1 := fsmApply(t, m, last+1+uint64(i), c)
				r2 := fsmApply(t, m2, last+1+uint64(i), c)
				if fmt.Sprint(r1.Err) != fmt.Sprint(r2.Err) || !slices.Equal(r1.Invalidated, r2.Invalidated) {
					t.Fatalf("after restore, %v gives %v/%v vs %v/%v", c.Kind, r1.Err, r1.Invalidated, r2.Err, r2.Invalidated)
				}
			}
			g1, _, _, _, _, _ := stateDump(t, m)
			g2, _, _, _, _, _ := stateDump(t, m2)
			if !reflect.DeepEqual(g1, g2) {
				t.Fatal("states diverge after restore")
			}
		})
	}
}

func TestFSMSnapshotIsPointInTime(t *testing.T) {
	m, last := buildRandomFSM(t, 9)
	before, nodes, cfg, _, _, _ := stateDump(t, m)
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Changes after Snapshot() must not leak into what Persist writes.
	fsmApply(t, m, last+1, fsmNode("late"))
	fsmApply(t, m, last+2, Command{Kind: KindSetConfig, Key: CfgDurability, Value: "local"})
	fsmApply(t, m, last+3, Command{Kind: KindAcquire, Path: "late/file", Node: "late"})
	fsmApply(t, m, last+4, Command{Kind: KindAcquire, Path: before[0].Path, Node: "late", Force: true})
	sink := &bufSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	m2 := NewFSM()
	if err := m2.Restore(sink.reader()); err != nil {
		t.Fatal(err)
	}
	f2, n2, c2, _, _, a2 := stateDump(t, m2)
	if a2 != last {
		t.Fatalf("restored Applied = %d, want %d", a2, last)
	}
	if !reflect.DeepEqual(before, f2) || !reflect.DeepEqual(nodes, n2) || !mapsEqual(cfg, c2) {
		t.Fatal("snapshot includes changes made after Snapshot()")
	}
}

func TestFSMRestoreEmpty(t *testing.T) {
	m := NewFSM()
	sink := snapshotTo(t, m)
	m2, _ := buildRandomFSM(t, 2)
	if err := m2.Restore(sink.reader()); err != nil {
		t.Fatal(err)
	}
	m2.Read(func(s *State) {
		if l, sp := s.Counts(); l != 0 || sp != 0 || len(s.Nodes()) != 0 || s.File("dir0/f1") != nil {
			t.Fatalf("restore of empty snapshot kept old state: %d %d %v", l, sp, s.Nodes())
		}
		if !mapsEqual(s.Config(), DefaultConfig()) {
			t.Fatalf("config = %v", s.Config())
		}
	})
}

func TestFSMRestoreJunk(t *testing.T) {
	for _, junk := range []string{"", "{", "not json", `{"files":[1]}`, `{"applied":"x"}`} {
		t.Run(junk, func(t *testing.T) {
			m, last := buildRandomFSM(t, 5)
			before, _, _, _, _, _ := stateDump(t, m)
			rc := &closeTracker{Reader: strings.NewReader(junk)}
			if err := m.Restore(rc); err == nil {
				t.Fatal("Restore accepted junk")
			}
			if !rc.closed {
				t.Fatal("Restore did not close its reader")
			}
			after, _, _, _, _, a := stateDump(t, m)
			if a != last || !reflect.DeepEqual(before, after) {
				t.Fatal("failed Restore changed the state")
			}
		})
	}
}

type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

func TestFSMPersistFailureCancels(t *testing.T) {
	m, _ := buildRandomFSM(t, 1)
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &bufSink{failWrite: true}
	if err := snap.Persist(sink); err == nil {
		t.Fatal("Persist succeeded on a failing sink")
	}
	if !sink.cancelled || sink.closed {
		t.Fatalf("sink cancelled=%v closed=%v, want cancelled only", sink.cancelled, sink.closed)
	}
}

// TestFSMConcurrentReaders exercises the locking under -race: readers
// and waiters run while commands are applied.
func TestFSMConcurrentReaders(t *testing.T) {
	m := NewFSM()
	fsmApply(t, m, 1, fsmNode("a"))
	const n = 300
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if f := m.File("p"); f != nil && f.Holder != "" && f.Holder != "a" {
					t.Errorf("bad holder %q", f.Holder)
				}
				m.Read(func(s *State) {
					s.List("", "/", "", 10)
					live, susp := 0, 0
					s.Walk(func(f *File) bool {
						if f.Exists() {
							live++
						}
						if f.Suspended() {
							susp++
						}
						return true
					})
					if l, sp := s.Counts(); l != live || sp != susp {
						t.Errorf("Counts = %d,%d; walk gives %d,%d", l, sp, live, susp)
					}
				})
				_ = m.Applied()
				select {
				case <-m.Changed():
				case <-stop:
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := m.WaitApplied(ctx, n); err != nil {
			t.Errorf("WaitApplied: %v", err)
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(stop)
		for i := uint64(2); i <= n; i++ {
			var c Command
			switch (i - 2) % 3 {
			case 0:
				c = Command{Kind: KindAcquire, Path: "p", Node: "a"}
			case 1:
				c = Command{Kind: KindCommit, Path: "p", Node: "a", Grant: m.File("p").Grant}
			case 2:
				c = Command{Kind: KindRelease, Path: "p", Node: "a", Grant: m.File("p").Grant}
			}
			data, _ := c.Encode()
			if r := m.Apply(&raft.Log{Index: i, Type: raft.LogCommand, Data: data}).(*Result); r.Err != nil {
				t.Errorf("apply %d: %v", i, r.Err)
				return
			}
		}
	}()
	wg.Wait()
	if m.Applied() != n {
		t.Fatalf("Applied = %d", m.Applied())
	}
}
