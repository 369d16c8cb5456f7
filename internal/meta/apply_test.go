package meta

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestAcquire(t *testing.T) {
	tests := []struct {
		name string
		// setup runs on a state with active nodes a, b, c; "x" exists
		// (written by a, valid on a).
		setup     func(h *metaHarness)
		cmd       Command
		wantErr   error
		wantHold  string // expected File.Holder in the result
		wantGrant string // "new" (= this index), "same" (unchanged), "none"
	}{
		{"free existing path", nil, Command{Kind: KindAcquire, Path: "x", Node: "b"}, nil, "b", "new"},
		{"new path", nil, Command{Kind: KindAcquire, Path: "new", Node: "a"}, nil, "a", "new"},
		{"same holder is idempotent", func(h *metaHarness) { h.acquire("x", "a") },
			Command{Kind: KindAcquire, Path: "x", Node: "a"}, nil, "a", "same"},
		{"same holder with force keeps grant", func(h *metaHarness) { h.acquire("x", "a") },
			Command{Kind: KindAcquire, Path: "x", Node: "a", Force: true}, nil, "a", "same"},
		{"held by another", func(h *metaHarness) { h.acquire("x", "a") },
			Command{Kind: KindAcquire, Path: "x", Node: "b"}, ErrHeld, "a", "same"},
		{"force takeover", func(h *metaHarness) { h.acquire("x", "a") },
			Command{Kind: KindAcquire, Path: "x", Node: "b", Force: true}, nil, "b", "new"},
		{"tombstone", func(h *metaHarness) { h.must(Command{Kind: KindDelete, Path: "x", Node: "a"}) },
			Command{Kind: KindAcquire, Path: "x", Node: "c"}, nil, "c", "new"},
		{"unknown node", nil, Command{Kind: KindAcquire, Path: "x", Node: "zz"}, ErrUnknownNode, "", "none"},
		{"removed node", func(h *metaHarness) { h.must(Command{Kind: KindNodeRemove, Node: "c"}) },
			Command{Kind: KindAcquire, Path: "x", Node: "c"}, ErrUnknownNode, "", "none"},
		{"no path", nil, Command{Kind: KindAcquire, Node: "a"}, ErrBadCommand, "", "none"},
		{"no node", nil, Command{Kind: KindAcquire, Path: "x"}, ErrBadCommand, "", "none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "a", "b", "c")
			h.write("x", "a")
			if tc.setup != nil {
				tc.setup(h)
			}
			before := h.s.File(tc.cmd.Path)
			var beforeGrant uint64
			if before != nil {
				beforeGrant = before.Grant
			}
			r := h.apply(tc.cmd)
			if !errors.Is(r.Err, tc.wantErr) || (tc.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("err = %v, want %v", r.Err, tc.wantErr)
			}
			if tc.wantGrant == "none" {
				if r.File != nil {
					t.Fatalf("File = %+v, want nil", r.File)
				}
				if after := h.s.File(tc.cmd.Path); after != before {
					t.Fatalf("state changed: %+v -> %+v", before, after)
				}
				return
			}
			if r.File == nil || r.File.Holder != tc.wantHold {
				t.Fatalf("File = %+v, want holder %q", r.File, tc.wantHold)
			}
			switch tc.wantGrant {
			case "new":
				if r.File.Grant != h.idx {
					t.Fatalf("Grant = %d, want this index %d", r.File.Grant, h.idx)
				}
			case "same":
				if r.File.Grant != beforeGrant || r.File.Grant == 0 {
					t.Fatalf("Grant = %d, want unchanged %d", r.File.Grant, beforeGrant)
				}
			}
			st := h.s.File(tc.cmd.Path)
			if st.Holder != r.File.Holder || st.Grant != r.File.Grant {
				t.Fatalf("state %+v differs from result %+v", st, r.File)
			}
			if !st.Suspended() {
				t.Fatal("held file not Suspended()")
			}
			if before != nil && (st.Version != before.Version || !slices.Equal(st.Valid, before.Valid)) {
				t.Fatalf("acquire changed content: %+v -> %+v", before, st)
			}
			checkCounts(t, h.s)
		})
	}
}

func TestAcquireDoesNotMutatePublishedRecord(t *testing.T) {
	h := newHarness(t, "a", "b")
	h.write("x", "a", "b")
	old := h.s.File("x")
	snap := *old
	snap.Valid = slices.Clone(old.Valid)
	h.acquire("x", "b")
	h.must(Command{Kind: KindAcquire, Path: "x", Node: "a", Force: true})
	if old.Holder != snap.Holder || old.Grant != snap.Grant || !slices.Equal(old.Valid, snap.Valid) {
		t.Fatalf("published record mutated: %+v, was %+v", old, snap)
	}
}

func TestCommit(t *testing.T) {
	type setupFn func(h *metaHarness) Command
	// Each setup returns the commit to apply; nodes a..e are active and "x"
	// was written by a with standby b and then replicated to c.
	// Invalidated lists every node that could answer for the old version
	// from its own state, less the committer: the old Valid (also members
	// that stay valid), or every active node for a creation.
	tests := []struct {
		name      string
		setup     setupFn
		wantErr   error
		wantValid []string
		wantInval []string
		wantDup   bool
	}{
		{"holder commits", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g}
		}, nil, []string{"a"}, []string{"b", "c"}, false},
		{"holder with standby", func(h *metaHarness) Command {
			g := h.acquire("x", "d")
			return Command{Kind: KindCommit, Path: "x", Node: "d", Grant: g, Standby: []string{"e"}}
		}, nil, []string{"d", "e"}, []string{"a", "b", "c"}, false},
		{"standby sorted and deduplicated", func(h *metaHarness) Command {
			g := h.acquire("x", "c")
			return Command{Kind: KindCommit, Path: "x", Node: "c", Grant: g, Standby: []string{"e", "a", "c", "e"}}
		}, nil, []string{"a", "c", "e"}, []string{"a", "b"}, false},
		{"new path", func(h *metaHarness) Command {
			g := h.acquire("y", "b")
			return Command{Kind: KindCommit, Path: "y", Node: "b", Grant: g, Standby: []string{"a"}}
		}, nil, []string{"a", "b"}, []string{"a", "c", "d", "e"}, false},
		{"not acquired", func(h *metaHarness) Command {
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: h.s.File("x").Version}
		}, ErrNotHolder, nil, nil, false},
		{"missing path", func(h *metaHarness) Command {
			return Command{Kind: KindCommit, Path: "nope", Node: "a", Grant: 1}
		}, ErrNotHolder, nil, nil, false},
		{"wrong node", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			return Command{Kind: KindCommit, Path: "x", Node: "b", Grant: g}
		}, ErrNotHolder, nil, nil, false},
		{"wrong grant", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g + 1}
		}, ErrNotHolder, nil, nil, false},
		{"fenced after forced takeover", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			h.must(Command{Kind: KindAcquire, Path: "x", Node: "b", Force: true})
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g}
		}, ErrNotHolder, nil, nil, false},
		{"fenced after takeover and re-acquire by same node", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			g2 := h.must(Command{Kind: KindAcquire, Path: "x", Node: "b", Force: true}).File.Grant
			h.must(Command{Kind: KindRelease, Path: "x", Node: "b", Grant: g2})
			h.acquire("x", "a")
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g}
		}, ErrNotHolder, nil, nil, false},
		{"after release", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			h.must(Command{Kind: KindRelease, Path: "x", Node: "a", Grant: g})
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g}
		}, ErrNotHolder, nil, nil, false},
		{"if-match ok", func(h *metaHarness) Command {
			v := h.s.File("x").Version
			g := h.acquire("x", "a")
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Cond: Cond{IfMatch: v}}
		}, nil, []string{"a"}, []string{"b", "c"}, false},
		{"if-match stale", func(h *metaHarness) Command {
			v := h.s.File("x").Version
			g := h.acquire("x", "a")
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Cond: Cond{IfMatch: v + 100}}
		}, ErrPrecondition, nil, nil, false},
		{"if-match on new path", func(h *metaHarness) Command {
			g := h.acquire("y", "a")
			return Command{Kind: KindCommit, Path: "y", Node: "a", Grant: g, Cond: Cond{IfMatch: 1}}
		}, ErrPrecondition, nil, nil, false},
		{"if-none-match on existing", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Cond: Cond{IfNoneMatch: true}}
		}, ErrPrecondition, nil, nil, false},
		{"if-none-match on new path", func(h *metaHarness) Command {
			g := h.acquire("y", "a")
			return Command{Kind: KindCommit, Path: "y", Node: "a", Grant: g, Cond: Cond{IfNoneMatch: true}}
		}, nil, []string{"a"}, []string{"b", "c", "d", "e"}, false},
		{"if-none-match on tombstone", func(h *metaHarness) Command {
			h.must(Command{Kind: KindDelete, Path: "x", Node: "a"})
			g := h.acquire("x", "a")
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Cond: Cond{IfNoneMatch: true}}
		}, nil, []string{"a"}, []string{"b", "c", "d", "e"}, false},
		{"idempotent retry", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			c := Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "key1", BlobID: "b1"}
			h.must(c)
			c.BlobID = "b2"
			return c
		}, nil, []string{"a"}, nil, true},
		{"idempotent retry after release and re-acquire", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			h.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "key1"})
			h.must(Command{Kind: KindRelease, Path: "x", Node: "a", Grant: g})
			g = h.acquire("x", "a")
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "key1"}
		}, nil, []string{"a"}, nil, true},
		{"idempotent retry skips precondition", func(h *metaHarness) Command {
			g := h.acquire("y", "a")
			c := Command{Kind: KindCommit, Path: "y", Node: "a", Grant: g, Idem: "key1", Cond: Cond{IfNoneMatch: true}}
			h.must(c)
			return c
		}, nil, []string{"a"}, nil, true},
		{"retry after a newer write is still a duplicate", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			h.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "key1"})
			h.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "key2"})
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "key1"}
		}, nil, []string{"a"}, nil, true},
		{"retry after the right was taken over is a duplicate, not a refusal", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			h.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "key1"})
			h.must(Command{Kind: KindAcquire, Path: "x", Node: "b", Force: true})
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "key1"}
		}, nil, []string{"a"}, nil, true},
		{"second commit under one grant", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			h.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Standby: []string{"b"}})
			return Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Standby: []string{"d"}}
		}, nil, []string{"a", "d"}, []string{"b", "c"}, false}, // c: still unfenced by the first, pending commit
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "a", "b", "c", "d", "e")
			f0 := h.write("x", "a", "b")
			h.must(Command{Kind: KindReplica, Path: "x", Node: "c", Version: f0.Version})
			c := tc.setup(h)
			c.Time = testTime
			before := h.s.File(c.Path)
			r := h.apply(c)
			if !errors.Is(r.Err, tc.wantErr) || (tc.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("err = %v, want %v", r.Err, tc.wantErr)
			}
			after := h.s.File(c.Path)
			if tc.wantErr != nil || tc.wantDup {
				if after != before {
					t.Fatalf("refused/duplicate commit changed the record: %+v -> %+v", before, after)
				}
				if r.Duplicate != tc.wantDup {
					t.Fatalf("Duplicate = %v, want %v", r.Duplicate, tc.wantDup)
				}
				if len(r.Invalidated) != 0 {
					t.Fatalf("Invalidated = %v, want none", r.Invalidated)
				}
				if tc.wantDup && (r.File == nil || !slices.Equal(r.File.Valid, tc.wantValid)) {
					t.Fatalf("duplicate File = %+v, want Valid %v", r.File, tc.wantValid)
				}
				return
			}
			if r.Duplicate {
				t.Fatal("Duplicate set on a fresh commit")
			}
			if after.Version != h.idx || r.File.Version != h.idx {
				t.Fatalf("Version = %d (result %d), want index %d", after.Version, r.File.Version, h.idx)
			}
			if !after.Exists() || after.Deleted {
				t.Fatalf("committed file does not exist: %+v", after)
			}
			if after.Holder != c.Node || after.Grant != c.Grant {
				t.Fatalf("commit changed the right: %+v", after)
			}
			if after.BlobID != c.BlobID || after.Size != c.Size || after.Sum.String() != c.Sum || !after.Modified.Time().Equal(testTime) {
				t.Fatalf("content fields not recorded: %+v from %+v", after, c)
			}
			if !slices.Equal(after.Valid, tc.wantValid) {
				t.Fatalf("Valid = %v, want %v", after.Valid, tc.wantValid)
			}
			// The table lists the others; the proposer is fenced too when it
			// could answer for the old state (its view lags its own commit).
			wantInval := slices.Clone(tc.wantInval)
			if !before.Exists() || before.IsValidOn(c.Node) || slices.Contains(before.unfenced(), c.Node) {
				wantInval = append(wantInval, c.Node)
			}
			slices.Sort(wantInval)
			wantInval = slices.Compact(wantInval)
			if !slices.Equal(r.Invalidated, wantInval) {
				t.Fatalf("Invalidated = %v, want %v", r.Invalidated, wantInval)
			}
			if after.ETag() != ETagOf(h.idx) {
				t.Fatalf("ETag = %s", after.ETag())
			}
			if rec, ok := h.s.Idem(c.Idem); c.Idem != "" && (!ok || rec.Version != h.idx || rec.Path != c.Path) {
				t.Fatalf("Idem(%s) = %+v, %v; want version %d", c.Idem, rec, ok, h.idx)
			}
			checkCounts(t, h.s)
		})
	}
}

func TestCommitValidAndInvalidatedExhaustive(t *testing.T) {
	nodes := []string{"a", "b", "c", "d", "e"}
	h := newHarness(t, nodes...)
	f := h.write("x", "a")
	for mask := 0; mask < 1<<len(nodes); mask++ {
		var standby []string
		for i, n := range nodes {
			if mask&(1<<i) != 0 {
				standby = append(standby, n)
			}
		}
		holder := nodes[mask%len(nodes)]
		t.Run(fmt.Sprint(holder, standby), func(t *testing.T) {
			// Vary the old valid set too: every node except one.
			for _, n := range nodes {
				if n != nodes[(mask/3)%len(nodes)] && !h.s.File("x").IsValidOn(n) {
					h.must(Command{Kind: KindReplica, Path: "x", Node: n, Version: f.Version})
				}
			}
			cur := h.s.File("x")
			g := h.acquire("x", holder)
			r := h.apply(Command{Kind: KindCommit, Path: "x", Node: holder, Grant: g, Standby: standby})
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			f = r.File
			h.must(Command{Kind: KindSettle, Path: "x", Version: f.Version})
			h.must(Command{Kind: KindRelease, Path: "x", Node: holder, Grant: g})
			want := slices.Compact(slices.Sorted(slices.Values(append([]string{holder}, standby...))))
			if !slices.Equal(r.File.Valid, want) {
				t.Fatalf("Valid = %v, want %v", r.File.Valid, want)
			}
			inval := cur.Valid // the holder too: its view lags its own commit
			if !slices.Equal(r.Invalidated, inval) {
				t.Fatalf("Invalidated = %v, want %v (before %v)", r.Invalidated, inval, cur.Valid)
			}
			// Whatever stopped being valid must be in Invalidated.
			for _, n := range cur.Valid {
				if !r.File.IsValidOn(n) && !slices.Contains(r.Invalidated, n) {
					t.Fatalf("%s lost validity but is not in Invalidated %v", n, r.Invalidated)
				}
			}
		})
	}
}

func TestIdemRecordsBoundedOldestForgotten(t *testing.T) {
	h := newHarness(t, "a")
	g := h.acquire("x", "a")
	const extra = 10
	for i := 1; i <= MaxIdem+extra; i++ {
		h.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: fmt.Sprintf("k%d", i)})
	}
	h.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g}) // no key: nothing pushed out
	for _, tc := range []struct {
		i    int
		want bool
	}{{1, false}, {extra, false}, {extra + 1, true}, {MaxIdem + extra, true}} {
		if _, ok := h.s.Idem(fmt.Sprintf("k%d", tc.i)); ok != tc.want {
			t.Errorf("key k%d remembered = %v, want %v", tc.i, ok, tc.want)
		}
	}
	if _, ok := h.s.Idem(""); ok {
		t.Fatal("empty key must never match")
	}
}

// A key names one write: presented again after other writes moved the
// file on (a retry after an unknown outcome), it is recognised as the same
// write and answered with the version it produced, not applied again.
func TestIdemKeyReusedIsDuplicateOfFirst(t *testing.T) {
	h := newHarness(t, "a", "b")
	g := h.acquire("x", "a")
	v1 := h.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "k"}).File.Version
	v2 := h.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "other"}).File.Version
	r := h.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "k"})
	if !r.Duplicate || r.Version != v1 || h.s.File("x").Version != v2 {
		t.Fatalf("retry: dup=%v version=%d file at %d; want duplicate of %d, file still at %d", r.Duplicate, r.Version, h.s.File("x").Version, v1, v2)
	}
}

func TestCommitIdemDuplicateKeepsVersion(t *testing.T) {
	h := newHarness(t, "a", "b")
	g := h.acquire("x", "a")
	c := Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "same", BlobID: "first", Standby: []string{"b"}}
	r1 := h.must(c)
	c.BlobID = "second"
	c.Standby = nil
	r2 := h.must(c)
	if !r2.Duplicate || r2.File.Version != r1.File.Version || r2.File.BlobID != "first" {
		t.Fatalf("retry: dup=%v file=%+v, want duplicate of %+v", r2.Duplicate, r2.File, r1.File)
	}
	if f := h.s.File("x"); f.Version != r1.File.Version || !slices.Equal(f.Valid, []string{"a", "b"}) {
		t.Fatalf("state changed by duplicate: %+v", f)
	}
}

// Commit must come from the holder of the right. A Commit with an empty
// node and grant 0 on a path nobody holds must be refused.
func TestCommitWithoutRightOnUnheldFile(t *testing.T) {
	h := newHarness(t, "a")
	h.write("x", "a")
	before := h.s.File("x")
	r := h.apply(Command{Kind: KindCommit, Path: "x", BlobID: "evil"})
	if !errors.Is(r.Err, ErrNotHolder) {
		t.Fatal("regression: apply.go commit accepts Commit{Node:\"\", Grant:0} on a released file " +
			"because an unheld record has Holder==\"\" and Grant==0: want ErrNotHolder, got " + fmt.Sprint(r.Err))
	}
	if h.s.File("x") != before {
		t.Fatal("refused commit changed the record")
	}
	r = h.apply(Command{Kind: KindRelease, Path: "x"})
	if !errors.Is(r.Err, ErrNotHolder) {
		t.Fatalf("release without right: err = %v, want ErrNotHolder", r.Err)
	}
}

// A removed node is removed for good: a later Commit naming it as standby
// must not make its copy count again.
func TestCommitStandbyRemovedNode(t *testing.T) {
	h := newHarness(t, "a", "b", "c")
	h.must(Command{Kind: KindNodeRemove, Node: "c"})
	g := h.acquire("x", "a")
	r := h.apply(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Standby: []string{"b", "c", "zz"}})
	if r.Err != nil {
		t.Fatalf("err = %v", r.Err)
	}
	if f := h.s.File("x"); f.IsValidOn("c") || f.IsValidOn("zz") {
		t.Fatal("regression: apply.go commit copies Command.Standby into Valid without checking that the nodes " +
			"are known and not removed: Valid = " + fmt.Sprint(f.Valid) + ", want [a b]")
	}
}

func TestRelease(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(h *metaHarness) Command
		wantErr error
	}{
		{"holder releases", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			return Command{Kind: KindRelease, Path: "x", Node: "a", Grant: g}
		}, nil},
		{"release after commit", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			h.commit("x", "a", g)
			return Command{Kind: KindRelease, Path: "x", Node: "a", Grant: g}
		}, nil},
		{"wrong grant", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			return Command{Kind: KindRelease, Path: "x", Node: "a", Grant: g - 1}
		}, ErrNotHolder},
		{"wrong node", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			return Command{Kind: KindRelease, Path: "x", Node: "b", Grant: g}
		}, ErrNotHolder},
		{"old grant after takeover", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			h.must(Command{Kind: KindAcquire, Path: "x", Node: "b", Force: true})
			return Command{Kind: KindRelease, Path: "x", Node: "a", Grant: g}
		}, ErrNotHolder},
		{"twice", func(h *metaHarness) Command {
			g := h.acquire("x", "a")
			h.must(Command{Kind: KindRelease, Path: "x", Node: "a", Grant: g})
			return Command{Kind: KindRelease, Path: "x", Node: "a", Grant: g}
		}, ErrNotHolder},
		{"missing path", func(h *metaHarness) Command {
			return Command{Kind: KindRelease, Path: "nope", Node: "a", Grant: 3}
		}, ErrNotHolder},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "a", "b")
			h.write("x", "a", "b")
			c := tc.setup(h)
			before := h.s.File(c.Path)
			r := h.apply(c)
			if !errors.Is(r.Err, tc.wantErr) || (tc.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("err = %v, want %v", r.Err, tc.wantErr)
			}
			after := h.s.File(c.Path)
			if tc.wantErr != nil {
				if after != before {
					t.Fatalf("refused release changed the record")
				}
				return
			}
			if after.Holder != "" || after.Grant != 0 || after.Suspended() {
				t.Fatalf("after release: %+v", after)
			}
			if after.Version != before.Version || !slices.Equal(after.Valid, before.Valid) || after.BlobID != before.BlobID {
				t.Fatalf("release changed content: %+v -> %+v", before, after)
			}
			checkCounts(t, h.s)
		})
	}
}

func TestReplica(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(h *metaHarness, v uint64) Command // x at version v, valid on a
		wantErr   error
		wantValid []string
	}{
		{"adds node", func(h *metaHarness, v uint64) Command {
			return Command{Kind: KindReplica, Path: "x", Node: "c", Version: v}
		}, nil, []string{"a", "c"}},
		{"keeps sorted", func(h *metaHarness, v uint64) Command {
			h.must(Command{Kind: KindReplica, Path: "x", Node: "c", Version: v})
			return Command{Kind: KindReplica, Path: "x", Node: "b", Version: v}
		}, nil, []string{"a", "b", "c"}},
		{"idempotent", func(h *metaHarness, v uint64) Command {
			h.must(Command{Kind: KindReplica, Path: "x", Node: "b", Version: v})
			return Command{Kind: KindReplica, Path: "x", Node: "b", Version: v}
		}, nil, []string{"a", "b"}},
		{"already valid holder copy", func(h *metaHarness, v uint64) Command {
			return Command{Kind: KindReplica, Path: "x", Node: "a", Version: v}
		}, nil, []string{"a"}},
		{"old version", func(h *metaHarness, v uint64) Command {
			h.write("x", "a")
			return Command{Kind: KindReplica, Path: "x", Node: "b", Version: v}
		}, ErrStale, nil},
		{"future version", func(h *metaHarness, v uint64) Command {
			return Command{Kind: KindReplica, Path: "x", Node: "b", Version: v + 1}
		}, ErrStale, nil},
		{"suspended", func(h *metaHarness, v uint64) Command {
			h.acquire("x", "a")
			return Command{Kind: KindReplica, Path: "x", Node: "b", Version: v}
		}, ErrStale, nil},
		{"deleted", func(h *metaHarness, v uint64) Command {
			h.must(Command{Kind: KindDelete, Path: "x", Node: "a"})
			return Command{Kind: KindReplica, Path: "x", Node: "b", Version: h.idx}
		}, ErrStale, nil},
		{"missing path", func(h *metaHarness, v uint64) Command {
			return Command{Kind: KindReplica, Path: "nope", Node: "b", Version: v}
		}, ErrStale, nil},
		{"unknown node", func(h *metaHarness, v uint64) Command {
			return Command{Kind: KindReplica, Path: "x", Node: "zz", Version: v}
		}, ErrUnknownNode, nil},
		{"removed node", func(h *metaHarness, v uint64) Command {
			h.must(Command{Kind: KindNodeRemove, Node: "c"})
			return Command{Kind: KindReplica, Path: "x", Node: "c", Version: v}
		}, ErrUnknownNode, nil},
		{"left node", func(h *metaHarness, v uint64) Command {
			h.setNodeState("c", NodeLeft)
			return Command{Kind: KindReplica, Path: "x", Node: "c", Version: v}
		}, ErrUnknownNode, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "a", "b", "c")
			v := h.write("x", "a").Version
			c := tc.setup(h, v)
			before := h.s.File(c.Path)
			r := h.apply(c)
			if !errors.Is(r.Err, tc.wantErr) || (tc.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("err = %v, want %v", r.Err, tc.wantErr)
			}
			after := h.s.File(c.Path)
			if tc.wantErr != nil {
				if after != before {
					t.Fatal("refused replica changed the record")
				}
				return
			}
			if !slices.Equal(after.Valid, tc.wantValid) || !slices.Equal(r.File.Valid, tc.wantValid) {
				t.Fatalf("Valid = %v (result %v), want %v", after.Valid, r.File.Valid, tc.wantValid)
			}
			if after.Version != before.Version {
				t.Fatalf("replica changed version %d -> %d", before.Version, after.Version)
			}
			checkCounts(t, h.s)
		})
	}
}

func TestDelete(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(h *metaHarness) Command // x written by a (standby b), replicated to c
		wantErr error
		wantDup bool
	}{
		{"live file", func(h *metaHarness) Command {
			return Command{Kind: KindDelete, Path: "x", Node: "d"}
		}, nil, false},
		{"missing", func(h *metaHarness) Command {
			return Command{Kind: KindDelete, Path: "nope", Node: "a"}
		}, ErrNotFound, false},
		{"acquired but never committed", func(h *metaHarness) Command {
			h.acquire("new", "a")
			return Command{Kind: KindDelete, Path: "new", Node: "a"}
		}, ErrNotFound, false},
		{"twice", func(h *metaHarness) Command {
			h.must(Command{Kind: KindDelete, Path: "x", Node: "a"})
			return Command{Kind: KindDelete, Path: "x", Node: "a"}
		}, ErrNotFound, false},
		{"idempotent retry", func(h *metaHarness) Command {
			h.must(Command{Kind: KindDelete, Path: "x", Node: "a", Idem: "del1"})
			return Command{Kind: KindDelete, Path: "x", Node: "b", Idem: "del1"}
		}, nil, true},
		{"held by another", func(h *metaHarness) Command {
			h.acquire("x", "b")
			return Command{Kind: KindDelete, Path: "x", Node: "a"}
		}, ErrHeld, false},
		{"held by another, forced", func(h *metaHarness) Command {
			h.acquire("x", "b")
			return Command{Kind: KindDelete, Path: "x", Node: "a", Force: true}
		}, nil, false},
		{"held by self", func(h *metaHarness) Command {
			h.acquire("x", "a")
			return Command{Kind: KindDelete, Path: "x", Node: "a"}
		}, nil, false},
		{"if-match ok", func(h *metaHarness) Command {
			return Command{Kind: KindDelete, Path: "x", Node: "a", Cond: Cond{IfMatch: h.s.File("x").Version}}
		}, nil, false},
		{"if-match stale", func(h *metaHarness) Command {
			return Command{Kind: KindDelete, Path: "x", Node: "a", Cond: Cond{IfMatch: h.s.File("x").Version - 1}}
		}, ErrPrecondition, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "a", "b", "c", "d")
			f0 := h.write("x", "a", "b")
			h.must(Command{Kind: KindReplica, Path: "x", Node: "c", Version: f0.Version})
			c := tc.setup(h)
			c.Time = testTime
			before := h.s.File(c.Path)
			r := h.apply(c)
			if !errors.Is(r.Err, tc.wantErr) || (tc.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("err = %v, want %v", r.Err, tc.wantErr)
			}
			if r.Duplicate != tc.wantDup {
				t.Fatalf("Duplicate = %v, want %v", r.Duplicate, tc.wantDup)
			}
			after := h.s.File(c.Path)
			if tc.wantErr != nil || tc.wantDup {
				if after != before {
					t.Fatal("refused/duplicate delete changed the record")
				}
				return
			}
			if !after.Deleted || after.Exists() || after.Version != h.idx {
				t.Fatalf("tombstone = %+v, want Deleted at version %d", after, h.idx)
			}
			if len(after.Valid) != 0 || after.Holder != "" || after.Grant != 0 || after.BlobID != "" || after.Size != 0 || !after.Sum.IsZero() {
				t.Fatalf("tombstone keeps content/right: %+v", after)
			}
			wantInval := before.Valid // the deleting node too: its view lags the delete
			if len(wantInval) == 0 {
				wantInval = nil
			}
			if !slices.Equal(r.Invalidated, wantInval) {
				t.Fatalf("Invalidated = %v, want old Valid %v", r.Invalidated, before.Valid)
			}
			checkCounts(t, h.s)
		})
	}
}

func TestDeleteThenRecreate(t *testing.T) {
	h := newHarness(t, "a", "b")
	h.write("x", "a", "b")
	del := h.must(Command{Kind: KindDelete, Path: "x", Node: "a"}).File
	if del.Exists() {
		t.Fatal("deleted file exists")
	}
	if l, _ := h.s.Counts(); l != 0 {
		t.Fatalf("live = %d", l)
	}
	g := h.acquire("x", "b")
	r := h.must(Command{Kind: KindCommit, Path: "x", Node: "b", Grant: g, BlobID: "new", Cond: Cond{IfNoneMatch: true}})
	if !r.File.Exists() || r.File.Deleted || r.File.Version <= del.Version || r.File.BlobID != "new" {
		t.Fatalf("recreated = %+v", r.File)
	}
	// A creation (over a tombstone too) invalidates every node, the writer
	// included: they answered "not found" from their own state.
	if !slices.Equal(r.Invalidated, []string{"a", "b"}) {
		t.Fatalf("Invalidated = %v, want [a b]", r.Invalidated)
	}
	h.must(Command{Kind: KindRelease, Path: "x", Node: "b", Grant: g})
	if l, s := h.s.Counts(); l != 1 || s != 0 {
		t.Fatalf("Counts = %d,%d", l, s)
	}
}

// An idempotency key remembered for a write must not make a Delete a
// "duplicate" (and the reverse): the HTTP layer (files/write.go,
// files/delete.go) only treats a key as a retry of the same kind of
// operation, the state machine must agree or a DELETE is answered 204
// without deleting anything.
func TestIdemKeyDoesNotCrossOperations(t *testing.T) {
	t.Run("delete after commit with same key", func(t *testing.T) {
		h := newHarness(t, "a")
		g := h.acquire("x", "a")
		h.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "k"})
		h.must(Command{Kind: KindRelease, Path: "x", Node: "a", Grant: g})
		r := h.apply(Command{Kind: KindDelete, Path: "x", Node: "a", Idem: "k"})
		if r.Duplicate || !h.s.File("x").Deleted {
			t.Fatal("regression: apply.go delete treats an Idem key produced by a Commit as a duplicate " +
				"Delete: the live file is not deleted and Result.Err is nil (Duplicate=true)")
		}
	})
	t.Run("commit after delete with same key", func(t *testing.T) {
		h := newHarness(t, "a")
		h.write("x", "a")
		h.must(Command{Kind: KindDelete, Path: "x", Node: "a", Idem: "k"})
		g := h.acquire("x", "a")
		r := h.apply(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "k"})
		if r.Duplicate || !h.s.File("x").Exists() {
			t.Fatal("regression: apply.go commit treats an Idem key produced by a Delete as a duplicate " +
				"Commit: the file stays deleted and Result.Err is nil (Duplicate=true)")
		}
	})
}

func TestNodeRemove(t *testing.T) {
	h := newHarness(t, "a", "b", "c")
	h.write("only-c", "c")
	h.write("bc", "b", "c")
	h.write("ab", "a", "b")
	gc := h.acquire("held-by-c", "c")
	h.commit("held-by-c", "c", gc, "a")
	ga := h.acquire("ab", "a")
	before := map[string]*File{}
	h.s.Walk(func(f *File) bool { before[f.Path] = f; return true })

	r := h.must(Command{Kind: KindNodeRemove, Node: "c", Time: testTime})
	if !slices.Equal(r.Invalidated, []string{"c"}) {
		t.Fatalf("Invalidated = %v, want [c]", r.Invalidated)
	}
	if n := h.s.Node("c"); n == nil || n.State != NodeRemoved || !n.Since.Equal(testTime) || n.PeerAddr != "c:7000" {
		t.Fatalf("node c = %+v", n)
	}
	tests := []struct {
		path      string
		wantValid []string
		wantHold  string
	}{
		{"only-c", nil, ""},
		{"bc", []string{"b"}, ""},
		{"ab", []string{"a", "b"}, "a"},
		{"held-by-c", []string{"a"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			f := h.s.File(tc.path)
			if len(f.Valid) != len(tc.wantValid) || (len(tc.wantValid) > 0 && !slices.Equal(f.Valid, tc.wantValid)) {
				t.Fatalf("Valid = %v, want %v", f.Valid, tc.wantValid)
			}
			if f.Holder != tc.wantHold {
				t.Fatalf("Holder = %q, want %q", f.Holder, tc.wantHold)
			}
			if f.Holder == "a" && f.Grant != ga {
				t.Fatalf("unrelated right changed: %+v", f)
			}
			if f.Version != before[tc.path].Version {
				t.Fatal("NodeRemove changed a version")
			}
		})
	}
	// The file "ab" had nothing to do with c: same record.
	if h.s.File("ab") != before["ab"] {
		t.Fatal("record not involving the removed node was replaced")
	}
	checkCounts(t, h.s)

	t.Run("commit with old grant fenced", func(t *testing.T) {
		r := h.apply(Command{Kind: KindCommit, Path: "held-by-c", Node: "c", Grant: gc})
		if !errors.Is(r.Err, ErrNotHolder) {
			t.Fatalf("err = %v", r.Err)
		}
	})
	t.Run("upsert of removed node refused", func(t *testing.T) {
		r := h.apply(Command{Kind: KindNodeUpsert, Info: &Node{ID: "c", State: NodeActive}})
		if !errors.Is(r.Err, ErrUnknownNode) {
			t.Fatalf("err = %v, want ErrUnknownNode", r.Err)
		}
		if h.s.Node("c").State != NodeRemoved {
			t.Fatal("removed node came back")
		}
	})
	t.Run("remove unknown node", func(t *testing.T) {
		r := h.apply(Command{Kind: KindNodeRemove, Node: "zz"})
		if !errors.Is(r.Err, ErrUnknownNode) {
			t.Fatalf("err = %v, want ErrUnknownNode", r.Err)
		}
		if h.s.Node("zz") != nil {
			t.Fatal("unknown node recorded")
		}
	})
}

func TestNodeUpsert(t *testing.T) {
	tests := []struct {
		name    string
		info    *Node
		wantErr error
	}{
		{"new node", &Node{ID: "n1", State: NodeActive, PeerAddr: "p", HTTPAddr: "h"}, nil},
		{"update existing", &Node{ID: "a", State: NodeLeft, PeerAddr: "p2"}, nil},
		{"nil info", nil, ErrBadCommand},
		{"empty id", &Node{State: NodeActive}, ErrBadCommand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "a")
			r := h.apply(Command{Kind: KindNodeUpsert, Info: tc.info})
			if !errors.Is(r.Err, tc.wantErr) || (tc.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("err = %v, want %v", r.Err, tc.wantErr)
			}
			if tc.wantErr != nil {
				if len(h.s.Nodes()) != 1 {
					t.Fatalf("nodes = %v", h.s.Nodes())
				}
				return
			}
			got := h.s.Node(tc.info.ID)
			if got == nil || *got != *tc.info {
				t.Fatalf("Node = %+v, want %+v", got, tc.info)
			}
			if got == tc.info {
				t.Fatal("state keeps the command's pointer")
			}
			tc.info.PeerAddr = "mutated"
			if h.s.Node(tc.info.ID).PeerAddr == "mutated" {
				t.Fatal("state aliases the command's Info")
			}
		})
	}
}

func TestSetConfigCommand(t *testing.T) {
	tests := []struct {
		key, value string
		wantErr    bool
	}{
		{CfgReplication, "3", false},
		{CfgReplication, "all", false},
		{CfgReplication, "0", true},
		{CfgDurability, "local", false},
		{CfgDurability, "one", true},
		{"nope", "1", true},
	}
	for _, tc := range tests {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			h := newHarness(t)
			r := h.apply(Command{Kind: KindSetConfig, Key: tc.key, Value: tc.value})
			if tc.wantErr {
				if !errors.Is(r.Err, ErrBadCommand) {
					t.Fatalf("err = %v, want ErrBadCommand", r.Err)
				}
				if !mapsEqual(h.s.Config(), DefaultConfig()) {
					t.Fatalf("config changed: %v", h.s.Config())
				}
				return
			}
			if r.Err != nil {
				t.Fatalf("err = %v", r.Err)
			}
			if got := h.s.Config()[tc.key]; got != tc.value {
				t.Fatalf("Config[%s] = %q, want %q", tc.key, got, tc.value)
			}
		})
	}
}

func TestApplyUnknownKind(t *testing.T) {
	for _, k := range []Kind{"", "frobnicate", "ACQUIRE"} {
		t.Run(string(k), func(t *testing.T) {
			h := newHarness(t, "a")
			r := h.apply(Command{Kind: k, Path: "x", Node: "a"})
			if !errors.Is(r.Err, ErrBadCommand) || r.File != nil {
				t.Fatalf("result = %+v", r)
			}
			if h.s.File("x") != nil {
				t.Fatal("state changed")
			}
		})
	}
}

func TestCondCheck(t *testing.T) {
	live := &File{Path: "x", Version: 5}
	tomb := &File{Path: "x", Version: 6, Deleted: true}
	fresh := &File{Path: "x"}
	tests := []struct {
		name string
		c    Cond
		f    *File
		ok   bool
	}{
		{"none live", Cond{}, live, true},
		{"match", Cond{IfMatch: 5}, live, true},
		{"mismatch", Cond{IfMatch: 4}, live, false},
		{"match on tombstone version", Cond{IfMatch: 6}, tomb, false},
		{"match on fresh", Cond{IfMatch: 1}, fresh, false},
		{"none-match live", Cond{IfNoneMatch: true}, live, false},
		{"none-match tomb", Cond{IfNoneMatch: true}, tomb, true},
		{"none-match fresh", Cond{IfNoneMatch: true}, fresh, true},
		{"both on live", Cond{IfMatch: 5, IfNoneMatch: true}, live, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Check(tc.f)
			if (err == nil) != tc.ok {
				t.Fatalf("Check = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrPrecondition) {
				t.Fatalf("err %v does not wrap ErrPrecondition", err)
			}
		})
	}
}

func TestCommandEncodeDecode(t *testing.T) {
	cmds := []Command{
		{Kind: KindAcquire, Path: "a/b", Node: "n1", Force: true},
		{Kind: KindCommit, Path: "a/b", Node: "n1", Grant: 9, BlobID: "blob", Size: 12, Sum: sumOf("abc"), Time: testTime,
			Standby: []string{"n2"}, Cond: Cond{IfMatch: 3}, Idem: "k"},
		{Kind: KindDelete, Path: "é/ü", Cond: Cond{IfNoneMatch: true}},
		{Kind: KindNodeUpsert, Info: &Node{ID: "n1", PeerAddr: "p", HTTPAddr: "h", State: NodeActive, Since: testTime}},
		{Kind: KindSetConfig, Key: CfgResume, Value: "reads"},
	}
	for _, c := range cmds {
		t.Run(string(c.Kind), func(t *testing.T) {
			b, err := c.Encode()
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeCommand(b)
			if err != nil {
				t.Fatal(err)
			}
			b2, _ := got.Encode()
			if string(b) != string(b2) {
				t.Fatalf("round trip differs:\n%s\n%s", b, b2)
			}
			if got.Kind != c.Kind || got.Path != c.Path || !got.Time.Equal(c.Time) || !slices.Equal(got.Standby, c.Standby) {
				t.Fatalf("got %+v, want %+v", got, c)
			}
		})
	}
	for _, junk := range []string{"", "{", "null x", `{"kind":5}`, `[1,2]`} {
		t.Run("junk "+junk, func(t *testing.T) {
			if _, err := DecodeCommand([]byte(junk)); !errors.Is(err, ErrBadCommand) {
				t.Fatalf("DecodeCommand(%q) err = %v, want ErrBadCommand", junk, err)
			}
		})
	}
}

func TestResultWireRoundTrip(t *testing.T) {
	sentinels := []error{ErrHeld, ErrNotHolder, ErrPrecondition, ErrNotFound, ErrStale, ErrBadCommand, ErrUnknownNode, ErrUnknownNamespace, ErrUnsupported}
	for _, e := range sentinels {
		t.Run(e.Error(), func(t *testing.T) {
			r := &Result{Index: 7, Err: fmt.Errorf("%w: detail", e), File: &File{Path: "x", Version: 7}}
			b, err := json.Marshal(r.Wire())
			if err != nil {
				t.Fatal(err)
			}
			var got Result
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			got.Unwire()
			if !errors.Is(got.Err, e) {
				t.Fatalf("unwired err %v does not match %v", got.Err, e)
			}
			for _, other := range sentinels {
				if other != e && errors.Is(got.Err, other) {
					t.Fatalf("unwired err also matches %v", other)
				}
			}
			if got.Err.Error() != r.Err.Error() || got.Index != 7 || got.File.Path != "x" {
				t.Fatalf("got %+v", got)
			}
		})
	}
	t.Run("plain error", func(t *testing.T) {
		r := (&Result{Err: errors.New("boom")}).Wire()
		var got Result
		b, _ := json.Marshal(r)
		_ = json.Unmarshal(b, &got)
		got.Unwire()
		if got.Err == nil || got.Err.Error() != "boom" {
			t.Fatalf("err = %v", got.Err)
		}
		for _, e := range sentinels {
			if errors.Is(got.Err, e) {
				t.Fatalf("plain error matches %v", e)
			}
		}
	})
	t.Run("no error", func(t *testing.T) {
		r := (&Result{Index: 1, Duplicate: true}).Wire()
		var got Result
		b, _ := json.Marshal(r)
		_ = json.Unmarshal(b, &got)
		if got.Unwire().Err != nil || !got.Duplicate {
			t.Fatalf("got %+v", got)
		}
	})
}

// A write to a file whose previous version is still pending inherits the
// nodes that version had not yet fenced: they may answer for a state older
// than both.
func TestPendingInheritsUnfenced(t *testing.T) {
	h := newHarness(t, "a", "b", "c")
	h.write("x", "a", "b", "c") // valid on a, b, c; settled
	g := h.acquire("x", "a")
	r1 := h.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g}) // pending: a, b, c unfenced
	if !r1.File.Pending || !slices.Equal(r1.Invalidated, []string{"a", "b", "c"}) {
		t.Fatalf("first commit: pending=%v invalidated=%v", r1.File.Pending, r1.Invalidated)
	}
	// A delete by a (valid set {a}) before the first commit settles must
	// still fence b and c.
	r2 := h.must(Command{Kind: KindDelete, Path: "x", Node: "a"})
	if !r2.File.Pending || !slices.Equal(r2.Invalidated, []string{"a", "b", "c"}) {
		t.Fatalf("delete over a pending version: pending=%v invalidated=%v, want b and c", r2.File.Pending, r2.Invalidated)
	}
	h.must(Command{Kind: KindSettle, Path: "x", Version: r2.File.Version})
	if f := h.s.File("x"); f.Pending || f.Unfenced != nil {
		t.Fatalf("settled tombstone: %+v", f)
	}
}

// TestBatchCommands: Replicas and Releases (core v5) apply each item as
// its own Replica or Release would, in order; an item refused leaves its
// record as it was and does not stop the others; a malformed batch is
// refused whole.
func TestBatchCommands(t *testing.T) {
	h := newHarness(t, "a", "b", "c")
	// x and y written and still held by a; z held with a write in progress.
	gx, gy := h.acquire("x", "a"), h.acquire("y", "a")
	x, y := h.commit("x", "a", gx).File, h.commit("y", "a", gy).File
	gz := h.acquire("z", "a")
	h.commit("z", "a", gz)
	zBefore := h.s.File("z")

	// x and y are released; z stays held (suspended); w does not exist.
	r := h.apply(Command{Kind: KindReleases, Node: "a", Items: []Item{{Path: "x", Grant: x.Grant}, {Path: "y", Grant: y.Grant}, {Path: "w", Grant: 9}}})
	if r.Err != nil || r.File != nil || !slices.Equal(r.Refused, []int{2}) {
		t.Fatalf("releases: err %v, file %v, refused %v (want [2])", r.Err, r.File, r.Refused)
	}
	for _, p := range []string{"x", "y"} {
		if f := h.s.File(p); f.Holder != "" || f.Suspended() {
			t.Fatalf("%s not released: %+v", p, f)
		}
	}
	if h.s.File("w") != nil {
		t.Fatal("a release of a missing path created it")
	}

	r = h.apply(Command{Kind: KindReplicas, Node: "c", Items: []Item{
		{Path: "x", Version: x.Version},       // valid on c
		{Path: "y", Version: y.Version + 1},   // stale: unchanged
		{Path: "z", Version: zBefore.Version}, // suspended: unchanged
		{Path: "x", Version: x.Version},       // again: idempotent
	}})
	if r.Err != nil || !slices.Equal(r.Refused, []int{1, 2}) {
		t.Fatalf("replicas: %v, refused %v (want [1 2])", r.Err, r.Refused)
	}
	if got := h.s.File("x").Valid; !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("x valid on %v, want [a c]", got)
	}
	if got := h.s.File("y").Valid; !slices.Equal(got, []string{"a"}) {
		t.Fatalf("y valid on %v, want [a]", got)
	}
	if h.s.File("z") != zBefore {
		t.Fatal("a refused item changed z's record")
	}
	checkCounts(t, h.s)

	for _, tc := range []struct {
		name string
		c    Command
	}{
		{"no node", Command{Kind: KindReplicas, Items: []Item{{Path: "x", Version: 1}}}},
		{"no items", Command{Kind: KindReleases, Node: "a"}},
		{"item without path", Command{Kind: KindReplicas, Node: "b", Items: []Item{{Path: "y", Version: y.Version}, {Version: 1}}}},
		{"too many", Command{Kind: KindReleases, Node: "a", Items: make([]Item, MaxItems+1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.s.File("y")
			if r := h.apply(tc.c); !errors.Is(r.Err, ErrBadCommand) {
				t.Fatalf("err = %v, want ErrBadCommand", r.Err)
			}
			if h.s.File("y") != before {
				t.Fatal("a refused batch changed a record")
			}
		})
	}
}

// TestSettlesCommand: Settles (core v6) settles each pending version it
// names, as Settle would; a stale item (the file moved on) changes nothing.
func TestSettlesCommand(t *testing.T) {
	h := newHarness(t, "a", "b")
	gx := h.acquire("x", "a")
	x := h.commit("x", "a", gx).File
	gy := h.acquire("y", "a")
	y := h.commit("y", "a", gy).File
	if !x.Pending || !y.Pending {
		t.Fatalf("commits not pending: x %v, y %v", x.Pending, y.Pending)
	}
	r := h.apply(Command{Kind: KindSettles, Items: []Item{{Path: "x", Version: x.Version}, {Path: "y", Version: y.Version + 1}}})
	if r.Err != nil || !slices.Equal(r.Refused, []int{1}) {
		t.Fatalf("settles: %v, refused %v (want [1])", r.Err, r.Refused)
	}
	if h.s.File("x").Pending {
		t.Fatal("x still pending")
	}
	if h.s.File("y") != y {
		t.Fatal("a stale settle changed y")
	}
	if r := h.apply(Command{Kind: KindSettles}); !errors.Is(r.Err, ErrBadCommand) {
		t.Fatalf("settles without items: %v", r.Err)
	}
	checkCounts(t, h.s)
}
