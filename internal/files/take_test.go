package files

import (
	"slices"
	"testing"

	"github.com/mure-dev/mure/internal/meta"
)

// kinds lists the kinds of the commands applied since index from, with a
// "+take" mark on a commit that took the right.
func (c *fakeCluster) kinds(from int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, cmd := range c.applied[from:] {
		k := string(cmd.Kind)
		if cmd.Take {
			k += "+take"
		}
		out = append(out, k)
	}
	return out
}

// TestPutTakesTheRightInItsCommit: an uncontended write is one entry that
// takes the right and commits (settled by the same entry in a one-node
// cluster); a holder writes under its right; a cluster with a voter older
// than core v2 gets the classic Acquire then Commit.
func TestPutTakesTheRightInItsCommit(t *testing.T) {
	commit, take, acquire, settle := string(meta.KindCommit), string(meta.KindCommit)+"+take", string(meta.KindAcquire), string(meta.KindSettle)
	tests := []struct {
		name   string
		nodes  []string
		noTake bool
		before func(c *fakeCluster) // writes made before the one measured
		want   []string
	}{
		{name: "one node, new file", nodes: []string{"a"}, want: []string{take}},
		{name: "three nodes, new file: settled by the leader after its barrier", nodes: []string{"a", "b", "c"}, want: []string{take, settle}},
		{name: "the holder writes again", nodes: []string{"a", "b"},
			before: func(c *fakeCluster) { c.put("a", "f", "v0", PutOptions{}) }, want: []string{take, settle}},
		{name: "one node, the holder writes again", nodes: []string{"a"},
			before: func(c *fakeCluster) { c.put("a", "f", "v0", PutOptions{}) }, want: []string{take}},
		{name: "a voter older than core v2, the holder writes again", nodes: []string{"a", "b"}, noTake: true,
			before: func(c *fakeCluster) { c.put("a", "f", "v0", PutOptions{}) }, want: []string{commit, settle}},
		{name: "a voter older than core v2", nodes: []string{"a", "b"}, noTake: true, want: []string{acquire, commit, settle}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t, tc.nodes...)
			c.noTake = tc.noTake
			if tc.before != nil {
				tc.before(c)
			}
			from := len(c.applied)
			info, err := c.put("a", "f", "new", PutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.kinds(from); !slices.Equal(got, tc.want) {
				t.Errorf("commands %v, want %v", got, tc.want)
			}
			f := c.fsms["a"].File("f")
			if f.Pending || f.Holder != "a" || f.Version != info.Version {
				t.Errorf("file after the write: pending %v holder %q version %d; want settled, held by a, version %d", f.Pending, f.Holder, f.Version, info.Version)
			}
			if got, _, err := c.read("a", "f", OpenOptions{}); err != nil || got != "new" {
				t.Errorf("read back: %q, %v", got, err)
			}
		})
	}
}
