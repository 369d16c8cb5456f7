package meta

import (
	"errors"
	"slices"
	"testing"
)

// TestCommitTake: a commit that takes the right (core v2) in one entry.
func TestCommitTake(t *testing.T) {
	take := func(path, node string, cond Cond) Command {
		return Command{Kind: KindCommit, Take: true, Path: path, Node: node, Cond: cond,
			BlobID: "b", Size: 1, Sum: sumOf("s"), Time: testTime, Idem: "k-" + path + node}
	}
	tests := []struct {
		name        string
		nodes       []string
		setup       func(h *metaHarness)
		cmd         Command
		wantErr     error
		wantPending bool
		wantInv     []string
	}{
		{name: "one node: settled at once, nobody to fence", nodes: []string{"a"},
			cmd: take("f", "a", Cond{})},
		{name: "one node, another removed: settled at once", nodes: []string{"a", "b"},
			setup: func(h *metaHarness) { h.setNodeState("b", NodeRemoved) }, cmd: take("f", "a", Cond{})},
		{name: "two nodes, creation: pending, every node fenced", nodes: []string{"a", "b"},
			cmd: take("f", "a", Cond{}), wantPending: true, wantInv: []string{"a", "b"}},
		{name: "two nodes, failed one counts", nodes: []string{"a", "b"},
			setup: func(h *metaHarness) { h.setNodeState("b", NodeFailed) },
			cmd:   take("f", "a", Cond{}), wantPending: true, wantInv: []string{"a", "b"}},
		{name: "overwrite of a replicated file: its valid nodes fenced", nodes: []string{"a", "b"},
			setup: func(h *metaHarness) { h.write("f", "b") },
			cmd:   take("f", "a", Cond{}), wantPending: true, wantInv: []string{"b"}},
		{name: "held by another node: refused", nodes: []string{"a", "b"},
			setup: func(h *metaHarness) { h.acquire("f", "b") }, cmd: take("f", "a", Cond{}), wantErr: ErrHeld},
		{name: "held by the writer: its right kept", nodes: []string{"a"},
			setup: func(h *metaHarness) { h.acquire("f", "a") }, cmd: take("f", "a", Cond{})},
		{name: "If-Match on a path never written", nodes: []string{"a"},
			cmd: take("f", "a", Cond{IfMatch: 3}), wantErr: ErrPrecondition},
		{name: "If-None-Match on an existing file", nodes: []string{"a"},
			setup: func(h *metaHarness) { h.write("f", "a") }, cmd: take("f", "a", Cond{IfNoneMatch: true}), wantErr: ErrPrecondition},
		{name: "unknown node", nodes: []string{"a"}, cmd: take("f", "x", Cond{}), wantErr: ErrUnknownNode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.nodes...)
			if tc.setup != nil {
				tc.setup(h)
			}
			before := h.s.File("f")
			r := h.apply(tc.cmd)
			if tc.wantErr != nil {
				if !errors.Is(r.Err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", r.Err, tc.wantErr)
				}
				if got := h.s.File("f"); got != before {
					t.Fatalf("a refused take changed the file: %+v", got)
				}
				return
			}
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			f := h.s.File("f")
			wantGrant := r.Index
			if before != nil && before.Holder == tc.cmd.Node {
				wantGrant = before.Grant
			}
			if f.Holder != tc.cmd.Node || f.Grant != wantGrant || f.Version != r.Index || !slices.Equal(f.Valid, []string{tc.cmd.Node}) {
				t.Errorf("file = holder %q grant %d version %d valid %v; want %q, %d, %d, [%s]",
					f.Holder, f.Grant, f.Version, f.Valid, tc.cmd.Node, wantGrant, r.Index, tc.cmd.Node)
			}
			if f.Pending != tc.wantPending || !slices.Equal(r.Invalidated, tc.wantInv) {
				t.Errorf("pending %v, invalidated %v; want %v, %v", f.Pending, r.Invalidated, tc.wantPending, tc.wantInv)
			}
			// The holder commits again under the grant the take gave it.
			if r := h.commit("f", tc.cmd.Node, f.Grant); r.Err != nil {
				t.Errorf("commit under the taken grant: %v", r.Err)
			}
			checkCounts(t, h.s)
		})
	}
}
