package systest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

func TestRestartWithOnlyDataDir(t *testing.T) {
	c := testcluster.Start(t, 3)
	put(t, c.Client(0), "before", "1")
	c.Kill(2)
	c.Restart(2) // no --join, no key: both come from the data directory
	c.WaitReady(2)
	mustGet(t, c.Client(2), "before", "1")
	put(t, c.Client(2), "after", "2")
	mustGet(t, c.Client(0), "after", "2")
}

func TestLeaderFailover(t *testing.T) {
	c := testcluster.Start(t, 3)
	put(t, c.Client(), "x", "1")
	old := c.Leader()
	oldID := c.Nodes[old].ID()
	c.Kill(old)
	next := c.Leader()
	if c.Nodes[next].ID() == oldID {
		t.Fatal("the stopped leader is still leader")
	}
	var others []int
	for _, i := range c.Running() {
		others = append(others, i)
	}
	cl := c.Client(others...)
	put(t, cl, "x", "2")
	for _, i := range others {
		mustGet(t, c.Client(i), "x", "2")
	}
}

func TestWriteWhileNodeDownThenCatchUp(t *testing.T) {
	c := testcluster.Start(t, 3)
	if _, err := c.Client(0).SetConfig(ctxT(t), "resume", "immediate"); err != nil {
		t.Fatal(err)
	}
	put(t, c.Client(0), "keep", "old")
	put(t, c.Client(0), "gone", "old")
	waitValidEverywhere(t, c, "keep")
	waitValidEverywhere(t, c, "gone")

	c.Kill(2)
	// Writes and deletes succeed with a node down (the invalidation waits
	// at most for its read lease to expire).
	put(t, c.Client(0, 1), "keep", "new")
	if err := c.Client(0, 1).Delete(ctxT(t), "gone", nil); err != nil {
		t.Fatal(err)
	}
	c.Restart(2)
	// From the first answer on, the returning node never serves what it
	// missed: every GET is the new content, a redirect, or a 503.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if r := rawGet(t, c.HTTPAddr(2), "keep"); r.StatusCode == http.StatusOK {
			if r.Header.Get("X-Mure-Sha256") != sha("new") {
				t.Fatal("the restarted node served the version it missed")
			}
		}
		if r := rawGet(t, c.HTTPAddr(2), "gone"); r.StatusCode == http.StatusOK {
			t.Fatal("the restarted node served a file deleted while it was down")
		}
		if c.Nodes[2].Cluster().HasReadLease() && c.Nodes[2].Cluster().FSM().File("keep").IsValidOn(c.Nodes[2].ID()) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitValidEverywhere(t, c, "keep")
	mustGet(t, c.Client(2), "keep", "new")
	if _, err := get(t, c.Client(2), "gone"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("deleted file on the restarted node: %v", err)
	}
}

func TestStaleHintIsCorrected(t *testing.T) {
	c := testcluster.Start(t, 3)
	ctx := ctxT(t)
	if _, err := c.Client(0).SetConfig(ctx, "resume.idle", "1h"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client(0).SetConfig(ctx, "durability", "local"); err != nil {
		t.Fatal(err)
	}
	put(t, c.Client(0), "f", "v")
	// A request that reaches node 1 (no valid copy) as if sent there by a
	// stale hint: it is sent on to the holder, and the hop count grows.
	r := rawGet(t, c.HTTPAddr(1), "f?hop=3")
	if r.StatusCode != http.StatusTemporaryRedirect || !strings.Contains(r.Header.Get("Location"), c.HTTPAddr(0)) || !strings.Contains(r.Header.Get("Location"), "hop=4") {
		t.Fatalf("stale hint: %d %s, want 307 to %s with hop=4", r.StatusCode, r.Header.Get("Location"), c.HTTPAddr(0))
	}
	// Past the hop limit, the chain stops with a clear error.
	if r := rawGet(t, c.HTTPAddr(1), "f?hop=8"); r.StatusCode != http.StatusLoopDetected {
		t.Fatalf("hop limit: %d, want 508", r.StatusCode)
	}
}

func TestReplicationRestoredAfterRemove(t *testing.T) {
	c := testcluster.Start(t, 4)
	ctx := ctxT(t)
	cl := c.Client(0)
	for k, v := range map[string]string{"replication": "2", "resume": "immediate"} {
		if _, err := cl.SetConfig(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, p := range paths {
		put(t, c.Client(0), p, "content-"+p)
	}
	fsm := c.Nodes[0].Cluster().FSM()
	twoCopies := func(exclude string) bool {
		for _, p := range paths {
			f := fsm.File(p)
			n := 0
			for _, id := range f.Valid {
				if id != exclude {
					n++
				}
			}
			if n < 2 || f.Suspended() {
				return false
			}
		}
		return true
	}
	testcluster.WaitFor(t, 20*time.Second, "two valid copies of every file", func() bool { return twoCopies("") })
	// Remove node 3 for good: the files it held get a new second copy.
	victim := c.Nodes[3].ID()
	c.Kill(3)
	testcluster.WaitFor(t, 20*time.Second, "gossip to see node 3 dead", func() bool { return !c.Nodes[0].Cluster().Alive(victim) })
	if err := c.Client(0).RemoveNode(ctx, victim); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 30*time.Second, "two copies again without node 3", func() bool { return twoCopies(victim) })
	for _, p := range paths {
		mustGet(t, c.Client(0, 1, 2), p, "content-"+p)
	}
}

func TestNodeWithoutClusterKeyIsRefused(t *testing.T) {
	c := testcluster.Start(t, 1)
	put(t, c.Client(), "secret", "s3cr3t")
	other := filepath.Join(t.TempDir(), "intruder")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := node.Open(ctx, node.Config{
		DataDir: other, HTTPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", Timing: cluster.FastTiming(),
		Join: []string{c.Nodes[0].PeerAddr()}, Key: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
	})
	if err == nil {
		t.Fatal("a node with the wrong key joined the cluster")
	}
	if !errors.Is(err, cluster.ErrJoin) {
		t.Fatalf("join with the wrong key: %v, want a join error", err)
	}
	for _, m := range c.Nodes[0].Cluster().Members() {
		if m.ID != c.Nodes[0].ID() {
			t.Fatalf("the cluster lists an intruder: %+v", m)
		}
	}
}

func TestDataDirOfAnotherClusterIsRefused(t *testing.T) {
	a := testcluster.Start(t, 1)
	b := testcluster.Start(t, 1)
	dirB := b.Nodes[0].Dir
	keyA, err := os.ReadFile(a.Nodes[0].KeyPath())
	if err != nil {
		t.Fatal(err)
	}
	b.Kill(0)
	// Node b's directory holds cluster B; pointing it at cluster A (with
	// A's key) must fail clearly instead of mixing the two.
	if err := os.Remove(filepath.Join(dirB, "cluster.key")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = node.Open(ctx, node.Config{
		DataDir: dirB, HTTPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", Timing: cluster.FastTiming(),
		Join: []string{a.Nodes[0].PeerAddr()}, Key: string(keyA),
	})
	if err == nil || !strings.Contains(err.Error(), "cluster") {
		t.Fatalf("joining another cluster with this data: %v, want a refusal naming the clusters", err)
	}
}

func waitValidEverywhere(t *testing.T, c *testcluster.Cluster, path string) {
	t.Helper()
	testcluster.WaitFor(t, 15*time.Second, path+" valid on every running node", func() bool {
		for _, i := range c.Running() {
			f := c.Nodes[i].Cluster().FSM().File(path)
			if f == nil || f.Suspended() {
				return false
			}
			for _, j := range c.Running() {
				if !f.IsValidOn(c.Nodes[j].ID()) {
					return false
				}
			}
		}
		return true
	})
}

// TestSelfHealingAfterNodeDeath: with k = 2 on 4 nodes, a node that dies
// (and is not removed) is recorded as failed after the grace period, and
// the files it held get a second copy elsewhere; when it returns it serves
// no stale version and no deleted file.
func TestSelfHealingAfterNodeDeath(t *testing.T) {
	c := testcluster.Start(t, 4)
	ctx := ctxT(t)
	for k, v := range map[string]string{"replication": "2", "resume": "immediate"} {
		if _, err := c.Client(0).SetConfig(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	var paths []string
	for i := 0; i < 12; i++ {
		p := fmt.Sprintf("heal/%02d", i)
		paths = append(paths, p)
		put(t, c.Client(0), p, "v1-"+p)
	}
	under := func(i int) int { return c.Nodes[i].Status().Files.UnderReplicated }
	testcluster.WaitFor(t, 20*time.Second, "every file at two copies", func() bool { return under(0) == 0 })

	// The victim: a node (not node 0, the writer) that holds copies.
	victim := -1
	fsm := c.Nodes[0].Cluster().FSM()
	for _, i := range []int{1, 2, 3} {
		for _, p := range paths {
			if fsm.File(p).IsValidOn(c.Nodes[i].ID()) {
				victim = i
			}
		}
	}
	if victim < 0 {
		t.Fatal("no node besides the writer holds a copy")
	}
	victimID := c.Nodes[victim].ID()
	c.Kill(victim)
	start := time.Now()
	testcluster.WaitFor(t, 30*time.Second, "the dead node recorded as failed and every file back at two copies", func() bool {
		st := c.Nodes[0].Status()
		failed := false
		for _, m := range st.Members {
			failed = failed || m.ID == victimID && m.State == "failed"
		}
		return failed && st.Files.UnderReplicated == 0
	})
	t.Logf("healed %d files in %v after the node died (failure grace %v)", len(paths), time.Since(start).Round(10*time.Millisecond), cluster.FastTiming().FailedAfter)

	// While it is away: one file changes, one is deleted.
	put(t, c.Client(0), paths[0], "v2")
	if err := c.Client(0).Delete(ctx, paths[1], nil); err != nil {
		t.Fatal(err)
	}
	c.Restart(victim)
	c.WaitReady(victim)
	testcluster.WaitFor(t, 20*time.Second, "the returning node active again", func() bool {
		for _, m := range c.Nodes[0].Status().Members {
			if m.ID == victimID {
				return m.State == "active"
			}
		}
		return false
	})
	mustGet(t, c.Client(victim), paths[0], "v2")
	if _, err := get(t, c.Client(victim), paths[1]); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("deleted file through the returning node: %v, want not found", err)
	}
}
