package meta

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// checkShared checks the interner's invariants over every record: each
// non-empty Valid and Unfenced is the one shared slice of its content
// (cap == len, so an append cannot write into it), every ID in them and
// every Holder is the shared string of that ID, and each shared set counts
// exactly the records using it.
func checkShared(t testing.TB, s *State) {
	t.Helper()
	refs := map[*string]int{}
	sameString := func(what, id string) {
		t.Helper()
		if shared, ok := s.in.ids[id]; !ok || unsafe.StringData(shared) != unsafe.StringData(id) {
			t.Fatalf("%s %q is not the shared string", what, id)
		}
	}
	s.Walk(func(f *File) bool {
		for _, set := range [][]string{f.Valid, f.unfenced()} {
			if set == nil {
				continue
			}
			if len(set) == 0 || cap(set) != len(set) {
				t.Fatalf("%q: set %q has len %d cap %d", f.Path, set, len(set), cap(set))
			}
			sh := s.in.sets[string(appendSetKey(nil, set))]
			if sh == nil || &sh.ids[0] != &set[0] {
				t.Fatalf("%q: set %q is not the shared one", f.Path, set)
			}
			refs[&set[0]]++
			for _, id := range set {
				sameString("node ID", id)
			}
		}
		if u := f.Unfenced; u != nil && (len(*u) == 0 || s.in.sets[string(appendSetKey(nil, *u))] == nil ||
			u != &s.in.sets[string(appendSetKey(nil, *u))].ids) {
			t.Fatalf("%q: Unfenced %q does not point at the shared set", f.Path, *u)
		}
		if f.Holder != "" {
			sameString("holder", f.Holder)
		}
		return true
	})
	if len(refs) != len(s.in.sets) {
		t.Fatalf("%d sets in use, %d remembered", len(refs), len(s.in.sets))
	}
	for _, sh := range s.in.sets {
		if refs[&sh.ids[0]] != sh.refs {
			t.Fatalf("set %q counts %d users, has %d", sh.ids, sh.refs, refs[&sh.ids[0]])
		}
	}
}

func TestValidSetsShared(t *testing.T) {
	h := newHarness(t, "a", "b", "c")
	for i := range 50 {
		h.write(fmt.Sprint("f", i), "a", "b")
	}
	x, y := h.s.File("f1"), h.s.File("f2")
	if &x.Valid[0] != &y.Valid[0] {
		t.Fatal("two files valid on {a b} do not share the set")
	}
	checkShared(t, h.s)
	if len(h.s.in.sets) != 1 || len(h.s.in.ids) != 3 { // c was in the creations' Unfenced
		t.Fatalf("%d sets, %d IDs; want 1 and 3", len(h.s.in.sets), len(h.s.in.ids))
	}
	for i := range 50 {
		p := fmt.Sprint("f", i)
		h.must(Command{Kind: KindReplica, Path: p, Node: "c", Version: h.s.File(p).Version})
	}
	checkShared(t, h.s)
	if len(h.s.in.sets) != 1 || !slices.Equal(h.s.File("f1").Valid, []string{"a", "b", "c"}) {
		t.Fatalf("after every file moved to {a b c}: %d sets (the unused one must be forgotten), f1 valid on %q",
			len(h.s.in.sets), h.s.File("f1").Valid)
	}
}

// Records share their valid sets: changing one file's set, or appending to
// a set read from a record, must never show in another file.
func TestValidSetChangeIsolated(t *testing.T) {
	steps := []struct {
		name string
		do   func(h *metaHarness) // changes x only
		x    []string             // x's set after it
	}{
		{"replica", func(h *metaHarness) {
			h.must(Command{Kind: KindReplica, Path: "x", Node: "c", Version: h.s.File("x").Version})
		}, []string{"a", "b", "c"}},
		{"drop", func(h *metaHarness) {
			h.must(Command{Kind: KindDrop, Path: "x", Node: "a", Version: h.s.File("x").Version})
		}, []string{"b"}},
		{"commit", func(h *metaHarness) {
			g := h.acquire("x", "b")
			h.commit("x", "b", g, "c")
		}, []string{"b", "c"}},
		{"delete", func(h *metaHarness) { h.must(Command{Kind: KindDelete, Path: "x", Node: "a"}) }, nil},
		{"append by a reader", func(h *metaHarness) {
			f := h.s.File("x")
			_ = append(f.Valid, "zz") // cap == len: copies
		}, []string{"a", "b"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			h := newHarness(t, "a", "b", "c")
			h.write("x", "a", "b")
			h.write("y", "a", "b")
			st.do(h)
			if got := h.s.File("x").Valid; !slices.Equal(got, st.x) {
				t.Fatalf("x valid on %q, want %q", got, st.x)
			}
			if got := h.s.File("y").Valid; !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("changing x changed y: valid on %q", got)
			}
			checkShared(t, h.s)
		})
	}
	t.Run("node remove", func(t *testing.T) {
		h := newHarness(t, "a", "b", "c")
		h.write("x", "a", "b")
		h.write("y", "b", "c")
		old := h.s.File("x")
		h.must(Command{Kind: KindNodeRemove, Node: "b"})
		if x, y := h.s.File("x").Valid, h.s.File("y").Valid; !slices.Equal(x, []string{"a"}) || !slices.Equal(y, []string{"c"}) {
			t.Fatalf("after removing b: x on %q, y on %q", x, y)
		}
		if !slices.Equal(old.Valid, []string{"a", "b"}) {
			t.Fatalf("a published record changed: %q", old.Valid)
		}
		checkShared(t, h.s)
	})
}

// Random histories (writes, standbys, replicas, drops, deletes, forced
// takeovers, node removal) keep the sharing invariants.
func TestSharedSetsRandomOps(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		nodes := []string{"a", "b", "c", "d"}
		h := newHarness(t, nodes...)
		for i := range 600 {
			p := fmt.Sprint("f", rng.IntN(20))
			n := nodes[rng.IntN(len(nodes))]
			cur := h.s.File(p)
			var v uint64
			if cur != nil {
				v = cur.Version
			}
			switch rng.IntN(7) {
			case 0, 1:
				if r := h.apply(Command{Kind: KindAcquire, Path: p, Node: n, Force: rng.IntN(3) == 0}); r.Err == nil {
					h.apply(Command{Kind: KindCommit, Path: p, Node: n, Grant: r.File.Grant, Standby: []string{nodes[rng.IntN(4)]}})
				}
			case 2:
				if cur != nil {
					h.apply(Command{Kind: KindRelease, Path: p, Node: cur.Holder, Grant: cur.Grant})
				}
			case 3:
				h.apply(Command{Kind: KindReplica, Path: p, Node: n, Version: v})
			case 4:
				h.apply(Command{Kind: KindDrop, Path: p, Node: n, Version: v})
			case 5:
				h.apply(Command{Kind: KindSettle, Path: p, Version: v})
			case 6:
				h.apply(Command{Kind: KindDelete, Path: p, Node: n, Force: true})
			}
			if i == 300 {
				h.must(Command{Kind: KindNodeRemove, Node: "d"})
			}
			checkShared(t, h.s)
		}
	}
}

// The interner is rebuilt on restore, from either snapshot format.
func TestSharedSetsAfterRestore(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		m, _ := buildRandomFSM(t, seed)
		for _, format := range []string{"binary", "json"} {
			t.Run(fmt.Sprint(format, seed), func(t *testing.T) {
				m2 := NewFSM()
				if err := m2.Restore(snapshotAs(t, m, format)); err != nil {
					t.Fatal(err)
				}
				m.Read(func(s *State) {
					m2.Read(func(s2 *State) {
						checkShared(t, s2)
						if len(s2.in.sets) != len(s.in.sets) {
							t.Fatalf("%d shared sets restored as %d", len(s.in.sets), len(s2.in.sets))
						}
					})
				})
			})
		}
	}
}
