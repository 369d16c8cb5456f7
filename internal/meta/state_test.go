package meta

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// metaHarness applies commands to a State with increasing raft indexes.
type metaHarness struct {
	t   testing.TB
	s   *State
	idx uint64
}

var testTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// sumOf is the hex SHA-256 of s: a valid sum for a test command.
func sumOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// newHarness returns a harness over an empty state with the given nodes
// added as active members.
func newHarness(t testing.TB, nodes ...string) *metaHarness {
	t.Helper()
	h := &metaHarness{t: t, s: NewState()}
	for _, id := range nodes {
		h.addNode(id)
	}
	return h
}

// apply applies c at the next index.
func (h *metaHarness) apply(c Command) *Result {
	h.t.Helper()
	h.idx++
	r := h.s.Apply(h.idx, c)
	if r.Index != h.idx {
		h.t.Fatalf("Result.Index = %d, want %d", r.Index, h.idx)
	}
	return r
}

// must applies c and fails the test if the state machine refused it.
func (h *metaHarness) must(c Command) *Result {
	h.t.Helper()
	r := h.apply(c)
	if r.Err != nil {
		h.t.Fatalf("apply %+v: unexpected error %v", c, r.Err)
	}
	return r
}

func (h *metaHarness) addNode(id string) {
	h.t.Helper()
	h.must(Command{Kind: KindNodeUpsert, Info: &Node{ID: id, PeerAddr: id + ":7000", HTTPAddr: id + ":8000", State: NodeActive, Since: testTime}})
}

func (h *metaHarness) setNodeState(id string, st NodeState) {
	h.t.Helper()
	h.must(Command{Kind: KindNodeUpsert, Info: &Node{ID: id, State: st, Since: testTime}})
}

// acquire takes the write right of path for node and returns the grant.
func (h *metaHarness) acquire(path, node string) uint64 {
	h.t.Helper()
	return h.must(Command{Kind: KindAcquire, Path: path, Node: node}).File.Grant
}

// commit commits a new version of path as node under grant.
func (h *metaHarness) commit(path, node string, grant uint64, standby ...string) *Result {
	h.t.Helper()
	return h.must(Command{Kind: KindCommit, Path: path, Node: node, Grant: grant, Standby: standby,
		BlobID: fmt.Sprintf("blob-%d", h.idx+1), Size: int64(len(path)), Sum: sumOf("sum-" + path), Time: testTime})
}

// write acquires, commits and releases path as node: a complete write.
func (h *metaHarness) write(path, node string, standby ...string) *File {
	h.t.Helper()
	g := h.acquire(path, node)
	r := h.commit(path, node, g, standby...)
	// As the leader does after its barrier: the version becomes visible.
	h.must(Command{Kind: KindSettle, Path: path, Version: r.File.Version})
	return h.must(Command{Kind: KindRelease, Path: path, Node: node, Grant: g}).File
}

// checkCounts compares Counts with a brute-force count over Walk.
func checkCounts(t testing.TB, s *State) {
	t.Helper()
	var live, susp int
	s.Walk(func(f *File) bool {
		if f.Exists() {
			live++
		}
		if f.Holder != "" {
			susp++
		}
		return true
	})
	gl, gs := s.Counts()
	if gl != live || gs != susp {
		t.Fatalf("Counts() = (%d, %d), brute force gives (%d, %d)", gl, gs, live, susp)
	}
}

func TestNewStateEmpty(t *testing.T) {
	s := NewState()
	if l, sp := s.Counts(); l != 0 || sp != 0 {
		t.Fatalf("Counts = %d,%d", l, sp)
	}
	if f := s.File("a"); f != nil {
		t.Fatalf("File(a) = %+v", f)
	}
	if n := s.Nodes(); len(n) != 0 {
		t.Fatalf("Nodes = %v", n)
	}
	if a := s.ActiveNodes(); len(a) != 0 {
		t.Fatalf("ActiveNodes = %v", a)
	}
	if got, want := s.Config(), DefaultConfig(); !mapsEqual(got, want) {
		t.Fatalf("Config = %v, want %v", got, want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestNodesAndActiveNodes(t *testing.T) {
	h := newHarness(t, "n3", "n1", "n2", "n4")
	h.setNodeState("n4", NodeLeft)
	h.must(Command{Kind: KindNodeRemove, Node: "n2", Time: testTime})

	var ids []string
	for _, n := range h.s.Nodes() {
		ids = append(ids, n.ID)
	}
	if want := []string{"n1", "n2", "n3", "n4"}; !slices.Equal(ids, want) {
		t.Fatalf("Nodes IDs = %v, want %v", ids, want)
	}
	if got, want := h.s.ActiveNodes(), []string{"n1", "n3"}; !slices.Equal(got, want) {
		t.Fatalf("ActiveNodes = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		id   string
		want NodeState
	}{{"n1", NodeActive}, {"n2", NodeRemoved}, {"n3", NodeActive}, {"n4", NodeLeft}} {
		t.Run(tc.id, func(t *testing.T) {
			n := h.s.Node(tc.id)
			if n == nil || n.State != tc.want {
				t.Fatalf("Node(%s) = %+v, want state %s", tc.id, n, tc.want)
			}
		})
	}
	if h.s.Node("nope") != nil {
		t.Fatal("Node(nope) should be nil")
	}
	// Nodes returns copies.
	ns := h.s.Nodes()
	ns[0].State = NodeRemoved
	if h.s.Node(ns[0].ID).State != NodeActive {
		t.Fatal("Nodes() leaked a reference to the state's record")
	}
}

func TestConfigReturnsCopy(t *testing.T) {
	h := newHarness(t)
	h.must(Command{Kind: KindSetConfig, Key: CfgReplication, Value: "2"})
	c := h.s.Config()
	if c[CfgReplication] != "2" || c[CfgDurability] != "two" {
		t.Fatalf("Config = %v", c)
	}
	c[CfgReplication] = "9"
	c[CfgDurability] = "local"
	if c2 := h.s.Config(); c2[CfgReplication] != "2" || c2[CfgDurability] != "two" {
		t.Fatalf("Config() is not a copy: %v", c2)
	}
	if DefaultConfig()[CfgDurability] != "two" {
		t.Fatal("DefaultConfig mutated")
	}
}

// TestCountsRandomOps applies random commands (many refused) and checks
// after each one that Counts agrees with a brute-force count.
func TestCountsRandomOps(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			nodes := []string{"a", "b", "c", "d"}
			h := newHarness(t, nodes...)
			paths := []string{"p1", "p2", "p3", "d/p4", "d/p5"}
			pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
			removed := false
			for i := 0; i < 600; i++ {
				p, n := pick(paths), pick(nodes)
				cur := h.s.File(p)
				var c Command
				switch op := rng.IntN(9); op {
				case 0, 1:
					c = Command{Kind: KindAcquire, Path: p, Node: n, Force: rng.IntN(4) == 0}
				case 2, 3:
					sb := pick(nodes)
					if removed && sb == "d" {
						sb = "a" // see TestCommitStandbyRemovedNode
					}
					c = Command{Kind: KindCommit, Path: p, Node: n, Standby: []string{sb}}
					if cur != nil && cur.Holder != "" && rng.IntN(3) > 0 {
						c.Node, c.Grant = cur.Holder, cur.Grant
					}
				case 4:
					c = Command{Kind: KindRelease, Path: p, Node: n}
					if cur != nil && cur.Holder != "" && rng.IntN(3) > 0 {
						c.Node, c.Grant = cur.Holder, cur.Grant
					}
				case 5:
					c = Command{Kind: KindReplica, Path: p, Node: n}
					if cur != nil {
						c.Version = cur.Version
					}
				case 6:
					c = Command{Kind: KindDelete, Path: p, Node: n, Force: rng.IntN(2) == 0}
				case 7:
					c = Command{Kind: KindCommit, Path: p, Node: n, Idem: "k"}
					if cur != nil && cur.Holder != "" {
						c.Node, c.Grant = cur.Holder, cur.Grant
					}
				case 8:
					if !removed && i > 300 {
						c = Command{Kind: KindNodeRemove, Node: "d"}
						removed = true
					} else {
						c = Command{Kind: KindDelete, Path: p, Node: n, Idem: "k"}
					}
				}
				h.apply(c)
				checkCounts(t, h.s)
				h.s.Walk(func(f *File) bool {
					if !slices.IsSorted(f.Valid) || len(slices.Compact(slices.Clone(f.Valid))) != len(f.Valid) {
						t.Fatalf("%s: Valid %v not sorted/unique", f.Path, f.Valid)
					}
					if f.Deleted && len(f.Valid) != 0 {
						t.Fatalf("%s: tombstone with valid copies %v", f.Path, f.Valid)
					}
					if removed && (f.Holder == "d" || f.IsValidOn("d")) {
						t.Fatalf("%s: removed node d still holder/valid: %+v", f.Path, f)
					}
					return true
				})
			}
		})
	}
}

func TestCountsScripted(t *testing.T) {
	h := newHarness(t, "a", "b")
	type want struct{ live, susp int }
	steps := []struct {
		name string
		do   func()
		want want
	}{
		{"acquire new path", func() { h.acquire("x", "a") }, want{0, 1}},
		{"commit", func() { h.commit("x", "a", h.s.File("x").Grant) }, want{1, 1}},
		{"release", func() { h.must(Command{Kind: KindRelease, Path: "x", Node: "a", Grant: h.s.File("x").Grant}) }, want{1, 0}},
		{"second file", func() { h.write("y", "b") }, want{2, 0}},
		{"reacquire", func() { h.acquire("y", "a") }, want{2, 1}},
		{"idempotent acquire", func() { h.acquire("y", "a") }, want{2, 1}},
		{"refused acquire", func() { h.apply(Command{Kind: KindAcquire, Path: "y", Node: "b"}) }, want{2, 1}},
		{"delete held file by holder", func() { h.must(Command{Kind: KindDelete, Path: "y", Node: "a"}) }, want{1, 0}},
		{"acquire tombstone", func() { h.acquire("y", "b") }, want{1, 1}},
		{"recreate", func() { h.commit("y", "b", h.s.File("y").Grant) }, want{2, 1}},
		{"node remove releases", func() { h.must(Command{Kind: KindNodeRemove, Node: "b"}) }, want{2, 0}},
		{"acquire and release without commit", func() {
			g := h.acquire("z", "a")
			h.must(Command{Kind: KindRelease, Path: "z", Node: "a", Grant: g})
		}, want{2, 0}},
		{"delete", func() { h.must(Command{Kind: KindDelete, Path: "x", Node: "a"}) }, want{1, 0}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do()
			l, s := h.s.Counts()
			if l != st.want.live || s != st.want.susp {
				t.Fatalf("Counts = (%d,%d), want (%d,%d)", l, s, st.want.live, st.want.susp)
			}
			checkCounts(t, h.s)
		})
	}
}

func TestWalkIncludesTombstonesInOrder(t *testing.T) {
	h := newHarness(t, "a")
	for _, p := range []string{"b", "a/c", "a", "c"} {
		h.write(p, "a")
	}
	h.must(Command{Kind: KindDelete, Path: "b", Node: "a"})
	var got []string
	h.s.Walk(func(f *File) bool { got = append(got, f.Path); return true })
	if want := []string{"a", "a/c", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("Walk = %v, want %v", got, want)
	}
	got = nil
	h.s.Walk(func(f *File) bool { got = append(got, f.Path); return len(got) < 2 })
	if len(got) != 2 {
		t.Fatalf("Walk did not stop: %v", got)
	}
}

func TestTargets(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4", "n5", "n6"}
	h := newHarness(t, nodes...)
	h.setNodeState("n6", NodeLeft)
	active := []string{"n1", "n2", "n3", "n4", "n5"}

	fresh := &File{Path: "some/file"}
	tests := []struct {
		name     string
		f        *File
		replicas int
		wantLen  int
		mustHave []string
		subsetOf []string
	}{
		{"all replicas=0", fresh, 0, 5, active, nil},
		{"negative means all", fresh, -1, 5, active, nil},
		{"k >= active is all", fresh, 5, 5, active, nil},
		{"k > active is all", fresh, 9, 5, active, nil},
		{"k=1", fresh, 1, 1, nil, active},
		{"k=3", fresh, 3, 3, nil, active},
		{"valid node kept", &File{Path: "some/file", Version: 3, Valid: []string{"n4"}}, 2, 2, []string{"n4"}, nil},
		{"two valid kept", &File{Path: "x", Version: 3, Valid: []string{"n2", "n5"}}, 2, 2, []string{"n2", "n5"}, nil},
		{"more valid than k", &File{Path: "x", Version: 3, Valid: []string{"n1", "n2", "n3", "n5"}}, 2, 2, nil, []string{"n1", "n2", "n3", "n5"}},
		{"inactive valid ignored", &File{Path: "x", Version: 3, Valid: []string{"n6"}}, 2, 2, nil, active},
		{"unknown valid ignored", &File{Path: "x", Version: 3, Valid: []string{"zz"}}, 3, 3, nil, active},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := h.s.Targets(tc.f, tc.replicas)
			if len(got) != tc.wantLen {
				t.Fatalf("Targets = %v, want %d nodes", got, tc.wantLen)
			}
			if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Fatalf("Targets = %v: not sorted/unique", got)
			}
			for _, id := range tc.mustHave {
				if !slices.Contains(got, id) {
					t.Fatalf("Targets = %v, missing %s", got, id)
				}
			}
			for _, id := range got {
				if tc.subsetOf != nil && !slices.Contains(tc.subsetOf, id) {
					t.Fatalf("Targets = %v, %s not in %v", got, id, tc.subsetOf)
				}
				if !slices.Contains(active, id) {
					t.Fatalf("Targets = %v includes inactive %s", got, id)
				}
			}
			if again := h.s.Targets(tc.f, tc.replicas); !slices.Equal(again, got) {
				t.Fatalf("Targets not stable: %v then %v", got, again)
			}
		})
	}
}

func TestTargetsSpread(t *testing.T) {
	// Rendezvous hashing should not put every path on the same node.
	h := newHarness(t, "n1", "n2", "n3", "n4")
	seen := map[string]int{}
	for i := 0; i < 200; i++ {
		for _, id := range h.s.Targets(&File{Path: fmt.Sprintf("dir/f%d", i)}, 1) {
			seen[id]++
		}
	}
	if len(seen) != 4 {
		t.Fatalf("200 paths placed on only %v", seen)
	}
	for id, n := range seen {
		if n < 20 {
			t.Fatalf("node %s got only %d of 200 paths: %v", id, n, seen)
		}
	}
}

// TestTargetsRendezvousStability: removing (or adding) a node only moves
// paths whose target set included (or now includes) that node.
func TestTargetsRendezvousStability(t *testing.T) {
	const k = 2
	nodes := []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7"}
	h := newHarness(t, nodes...)
	var paths []string
	for i := 0; i < 300; i++ {
		paths = append(paths, fmt.Sprintf("p/%d.txt", i))
	}
	// Half the paths have a valid copy somewhere.
	for i, p := range paths {
		if i%2 == 0 {
			h.write(p, nodes[i%len(nodes)])
		}
	}
	targets := func() map[string][]string {
		m := map[string][]string{}
		for _, p := range paths {
			f := h.s.File(p)
			if f == nil {
				f = &File{Path: p}
			}
			m[p] = h.s.Targets(f, k)
		}
		return m
	}
	before := targets()
	t.Run("remove", func(t *testing.T) {
		h.must(Command{Kind: KindNodeRemove, Node: "n3"})
		after := targets()
		moved := 0
		for _, p := range paths {
			if slices.Contains(before[p], "n3") {
				moved++
				if slices.Contains(after[p], "n3") {
					t.Fatalf("%s still targets removed n3: %v", p, after[p])
				}
				continue
			}
			if !slices.Equal(before[p], after[p]) {
				t.Fatalf("%s moved from %v to %v though n3 was not a target", p, before[p], after[p])
			}
		}
		if moved == 0 {
			t.Fatal("no path targeted n3: test is vacuous")
		}
		before = after
	})
	t.Run("add", func(t *testing.T) {
		h.addNode("n8")
		after := targets()
		for _, p := range paths {
			if !slices.Equal(before[p], after[p]) && !slices.Contains(after[p], "n8") {
				t.Fatalf("%s moved from %v to %v without involving new n8", p, before[p], after[p])
			}
		}
	})
}

func TestETag(t *testing.T) {
	for _, v := range []uint64{1, 7, 42, 1 << 40, ^uint64(0)} {
		t.Run(fmt.Sprint("roundtrip", v), func(t *testing.T) {
			tag := ETagOf(v)
			if tag != fmt.Sprintf("%q", fmt.Sprint(v)) {
				t.Fatalf("ETagOf(%d) = %s", v, tag)
			}
			if (&File{Version: v}).ETag() != tag {
				t.Fatal("File.ETag differs from ETagOf")
			}
			for _, in := range []string{tag, "W/" + tag, fmt.Sprint(v)} {
				got, ok := ParseETag(in)
				if !ok || got != v {
					t.Fatalf("ParseETag(%s) = %d, %v; want %d", in, got, ok, v)
				}
			}
		})
	}
	for _, junk := range []string{"", `""`, `"0"`, "0", `W/""`, `"abc"`, `"12`, `12"`, `"-1"`, `"+5"`, `" 5"`, `"5 "`,
		`"1.5"`, `"0x10"`, `"18446744073709551616"`, `w/"5"`, `W/W/"5"`, `"`, `*`, `"5", "6"`, "W/"} {
		t.Run("junk "+junk, func(t *testing.T) {
			if v, ok := ParseETag(junk); ok {
				t.Fatalf("ParseETag(%q) = %d, true; want rejection", junk, v)
			}
		})
	}
}
