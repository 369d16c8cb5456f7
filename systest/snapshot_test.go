package systest

import (
	"fmt"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// With a tiny snapshot threshold, a node added late is brought up to date
// by a snapshot install, and a restarted node recovers from its own
// snapshot plus the log after it.
func TestSnapshotInstallAndRestore(t *testing.T) {
	small := testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.Timing.SnapshotThreshold, cfg.Timing.SnapshotTrailing = 32, 8
	}}
	c := testcluster.Start(t, 3, small)
	if _, err := c.Client(0).SetConfig(ctxT(t), "resume", "immediate"); err != nil {
		t.Fatal(err)
	}
	const n = 60
	for i := 0; i < n; i++ {
		put(t, c.Client(0), fmt.Sprintf("f/%03d", i), fmt.Sprint("content ", i))
	}
	testcluster.WaitFor(t, 20*time.Second, "a snapshot on node 1", func() bool {
		return c.Nodes[1].Cluster().RaftStats()["last_snapshot_index"] != "0"
	})
	c.Restart(1)
	c.WaitReady(1)
	nd := c.AddWith(small)
	for i := 0; i < n; i += 7 {
		mustGet(t, c.Client(1), fmt.Sprintf("f/%03d", i), fmt.Sprint("content ", i))
		mustGet(t, c.Client(nd.Index), fmt.Sprintf("f/%03d", i), fmt.Sprint("content ", i))
	}
	if got := c.Nodes[nd.Index].Status().Files.Live; got != n {
		t.Fatalf("the new node's catalogue has %d live files, want %d", got, n)
	}
}
