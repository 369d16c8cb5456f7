package files

import (
	"testing"

	"github.com/mure-dev/mure/internal/meta"
)

// TestRetriedCommitKeepsItsBlob: a commit whose answer was lost is re-sent
// by the cluster with the same blob, and the state machine answers the
// re-sent one as a duplicate of the first, which committed that very
// blob. The writer must keep it: it is the new version's copy (with
// durability=local, the only one).
func TestRetriedCommitKeepsItsBlob(t *testing.T) {
	for _, tc := range []struct {
		name   string
		noTake bool
	}{
		{"one entry", false},
		{"a voter older than core v2: acquire, then commit", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t, "a", "b")
			c.apply(meta.Command{Kind: meta.KindSetConfig, Key: meta.CfgDurability, Value: "local"})
			c.noTake, c.lostAnswers = tc.noTake, true
			info, err := c.put("a", "f", "new", PutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c.lostAnswers = false
			f := c.fsms["a"].File("f")
			if f.Version != info.Version {
				t.Fatalf("acknowledged version %d, current %d", info.Version, f.Version)
			}
			if _, err := c.svcs["a"].st.Open("f", f.BlobID); err != nil {
				t.Errorf("the committed blob is gone from the writer: %v", err)
			}
			if got, _, err := c.read("a", "f", OpenOptions{}); err != nil || got != "new" {
				t.Errorf("read back: %q, %v", got, err)
			}
		})
	}
}
