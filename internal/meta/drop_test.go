package meta

import (
	"errors"
	"slices"
	"testing"
)

func TestDrop(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(h *metaHarness, v uint64) Command // x at version v, valid on a and b
		wantErr   error
		wantValid []string
	}{
		{"removes node", func(h *metaHarness, v uint64) Command {
			return Command{Kind: KindDrop, Path: "x", Node: "b", Version: v}
		}, nil, []string{"a"}},
		{"last copy", func(h *metaHarness, v uint64) Command {
			h.must(Command{Kind: KindDrop, Path: "x", Node: "a", Version: v})
			return Command{Kind: KindDrop, Path: "x", Node: "b", Version: v}
		}, nil, nil},
		{"not valid there: no change", func(h *metaHarness, v uint64) Command {
			return Command{Kind: KindDrop, Path: "x", Node: "c", Version: v}
		}, nil, []string{"a", "b"}},
		{"suspended: still dropped", func(h *metaHarness, v uint64) Command {
			h.acquire("x", "a")
			return Command{Kind: KindDrop, Path: "x", Node: "a", Version: v}
		}, nil, []string{"b"}},
		{"old version", func(h *metaHarness, v uint64) Command {
			h.write("x", "a", "b")
			return Command{Kind: KindDrop, Path: "x", Node: "b", Version: v}
		}, ErrStale, nil},
		{"deleted", func(h *metaHarness, v uint64) Command {
			h.must(Command{Kind: KindDelete, Path: "x", Node: "a"})
			return Command{Kind: KindDrop, Path: "x", Node: "b", Version: h.idx}
		}, ErrStale, nil},
		{"keep: enough copies left", func(h *metaHarness, v uint64) Command {
			return Command{Kind: KindDrop, Path: "x", Node: "b", Version: v, Keep: 1}
		}, nil, []string{"a"}},
		{"keep: too few left", func(h *metaHarness, v uint64) Command {
			return Command{Kind: KindDrop, Path: "x", Node: "b", Version: v, Keep: 2}
		}, ErrKeep, nil},
		{"keep: the second of two drops at once is refused", func(h *metaHarness, v uint64) Command {
			h.must(Command{Kind: KindDrop, Path: "x", Node: "a", Version: v, Keep: 1})
			return Command{Kind: KindDrop, Path: "x", Node: "b", Version: v, Keep: 1}
		}, ErrKeep, nil},
		{"missing path", func(h *metaHarness, v uint64) Command {
			return Command{Kind: KindDrop, Path: "nope", Node: "b", Version: v}
		}, ErrStale, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "a", "b", "c")
			v := h.write("x", "a", "b").Version
			c := tc.setup(h, v)
			before := h.s.File(c.Path)
			var beforeValid []string
			if before != nil {
				beforeValid = slices.Clone(before.Valid)
			}
			r := h.apply(c)
			if !errors.Is(r.Err, tc.wantErr) || (tc.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("err = %v, want %v", r.Err, tc.wantErr)
			}
			after := h.s.File(c.Path)
			if tc.wantErr != nil {
				if after != before {
					t.Fatal("refused drop changed the record")
				}
				return
			}
			if !slices.Equal(after.Valid, tc.wantValid) || !slices.Equal(r.File.Valid, tc.wantValid) {
				t.Fatalf("Valid = %v (result %v), want %v", after.Valid, r.File.Valid, tc.wantValid)
			}
			if after.Version != before.Version || after.Holder != before.Holder {
				t.Fatalf("drop changed more than the valid set: %+v -> %+v", before, after)
			}
			if len(r.Invalidated) != 0 {
				t.Fatalf("Invalidated = %v, want none", r.Invalidated)
			}
			if !slices.Equal(before.Valid, beforeValid) {
				t.Fatal("the published record was modified in place")
			}
			checkCounts(t, h.s)
		})
	}
}
