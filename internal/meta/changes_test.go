package meta

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"
)

// Without a DrainChanges, changed paths are kept up to maxChanged; beyond
// that the next drain asks for a rescan instead, which covers them.
func TestFSMChangesCapped(t *testing.T) {
	m := NewFSM()
	idx := uint64(1)
	fsmApply(t, m, idx, fsmNode("a"))
	m.DrainChanges()
	acquire := func(p string) {
		idx++
		fsmApply(t, m, idx, Command{Kind: KindAcquire, Path: p, Node: "a"})
	}
	for i := range maxChanged {
		acquire(fmt.Sprint("f", i))
	}
	m.mu.RLock()
	for p := range m.def.changed {
		if unsafe.StringData(p) != unsafe.StringData(m.state.File(p).Path) {
			t.Fatalf("changed path %q is not the record's string", p)
		}
	}
	m.mu.RUnlock()
	if paths, rescan := m.DrainChanges(); len(paths) != maxChanged || rescan {
		t.Fatalf("at the cap: %d paths, rescan %v; want %d, false", len(paths), rescan, maxChanged)
	}
	for i := range maxChanged {
		acquire(fmt.Sprint("g", i))
	}
	acquire("g0") // already in: no overflow
	m.mu.RLock()
	full, over := len(m.def.changed), m.def.overflow
	m.mu.RUnlock()
	if full != maxChanged || over {
		t.Fatalf("a path already in overflowed the set: %d paths, overflow %v", full, over)
	}
	acquire("one-more")
	if paths, rescan := m.DrainChanges(); len(paths) != 0 || !rescan {
		t.Fatalf("over the cap: %d paths, rescan %v; want a rescan", len(paths), rescan)
	}
	acquire("after")
	if paths, rescan := m.DrainChanges(); len(paths) != 1 || paths[0] != "after" || rescan {
		t.Fatalf("after the drain: %v, %v", paths, rescan)
	}
}

// A batch command (core v5) marks every path it names as changed.
func TestFSMChangesOfBatch(t *testing.T) {
	m := NewFSM()
	fsmApply(t, m, 1, fsmNode("a"))
	fsmApply(t, m, 2, Command{Kind: KindAcquire, Path: "x", Node: "a"})
	fsmApply(t, m, 3, Command{Kind: KindAcquire, Path: "y", Node: "a"})
	m.DrainChanges()
	fsmApply(t, m, 4, Command{Kind: KindReleases, Node: "a", Items: []Item{{Path: "x", Grant: 2}, {Path: "y", Grant: 3}}})
	paths, rescan := m.DrainChanges()
	slices.Sort(paths)
	if !slices.Equal(paths, []string{"x", "y"}) || rescan {
		t.Fatalf("changed %v (rescan %v), want [x y]", paths, rescan)
	}
	if f := m.File("y"); f.Holder != "" {
		t.Fatalf("y still held: %+v", f)
	}
}
