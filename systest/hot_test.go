//go:build linux

package systest

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestHotReplicas: with one copy per file, a file read through two nodes
// without a copy, some 16 and 4 times a second against a threshold of
// 12, gains a copy on the busier one (status and metrics count it, and
// that node then answers the read itself), never on the other: it reads
// at most ~5 times a second, so whenever it is the busier the two
// together stay below the threshold, however slow a loaded machine makes
// the reads. Once the reads stop, the extra copy is dropped and the file
// keeps its one configured copy (decision 0039). That the sum over nodes
// each below the threshold counts is TestHotRoundWants' case.
func TestHotReplicas(t *testing.T) {
	// DebugFaults: reads say what they were judged on (X-Mure-Judged).
	c := testcluster.Start(t, 3, testcluster.Options{Setup: func(i int, cfg *node.Config) { cfg.DebugFaults = true }})
	ctx := ctxT(t)
	settings := map[string]string{meta.CfgReplication: "1", meta.CfgDurability: "local", meta.CfgResume: "immediate",
		meta.CfgHotReads: "12", meta.CfgHotWindow: "2s", meta.CfgHotCool: "1s", meta.CfgHotMax: "2"}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if _, err := c.Client(0).SetConfig(ctx, k, settings[k]); err != nil {
			t.Fatalf("config %s=%s: %v", k, settings[k], err)
		}
	}
	const path = "hot/a"
	put(t, c.Client(0), path, "read me often")
	owner, reader := c.ID(0), c.ID(1)
	validEverywhere := func(want ...string) func() bool {
		return func() bool {
			for _, nd := range c.Nodes {
				f := nd.Cluster().FSM().File(path)
				if !f.Exists() || f.Suspended() || !slices.Equal(f.Valid, want) {
					return false
				}
			}
			return true
		}
	}
	testcluster.WaitFor(t, 10*time.Second, path+" released, its one copy on "+owner, validEverywhere(owner))

	// Reads through nodes 1 and 2, which forward them: each reader at
	// most 4 or 2 a second (a ticker drops the ticks a slow read misses).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, r := range []struct {
		i     int
		every time.Duration
	}{{1, 250 * time.Millisecond}, {1, 250 * time.Millisecond}, {1, 250 * time.Millisecond}, {1, 250 * time.Millisecond},
		{2, 500 * time.Millisecond}, {2, 500 * time.Millisecond}} {
		i, every := r.i, r.every
		wg.Go(func() {
			cl := client.New([]string{c.HTTPAddr(i)}, client.WithToken(c.Token()), client.WithForwarding())
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				if rd, err := cl.Get(rctx, path, nil); err == nil {
					rd.Close()
				}
				cancel()
			}
		})
	}
	stopped := false
	stopReads := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	t.Cleanup(stopReads)
	want := []string{owner, reader}
	slices.Sort(want)
	testcluster.WaitFor(t, 30*time.Second, path+" copied to the reading node "+reader, func() bool {
		h := c.Nodes[1].Status().Files
		return validEverywhere(want...)() && h.HotHeld == 1 && h.HotAdded == 1
	})
	// The reader answers from its own copy — but not while its read lease
	// has lapsed (a renewal late under load): it cannot confirm its copy
	// current then, and rightly sends the read to the owner (307). Such a
	// read is tried again; any other answer fails.
	testcluster.WaitFor(t, 10*time.Second, "a read through "+reader+" answered from its own copy", func() bool {
		resp := rawGet(t, c.HTTPAddr(1), path)
		resp.Body.Close()
		judged := resp.Header.Get("X-Mure-Judged")
		switch {
		case resp.StatusCode == http.StatusOK:
			return true
		case resp.StatusCode == http.StatusTemporaryRedirect && strings.Contains(judged, "leased=false"):
			t.Logf("a read through %s sent to %s while its lease lapsed (%s); again", reader, resp.Header.Get("Location"), judged)
			return false
		}
		t.Fatalf("a read through %s, which holds a hot copy: %d to %q (judged on %s), want 200 from its own copy",
			reader, resp.StatusCode, resp.Header.Get("Location"), judged)
		return false
	})
	if h := c.Nodes[2].Status().Files; h.HotHeld != 0 || h.HotAdded != 0 {
		t.Fatalf("node 2, the less busy reader, has hot copies: %+v", h)
	}
	testcluster.WaitFor(t, 5*time.Second, "mure_files_hot_replicas 1 on "+reader, func() bool {
		return scrapeMetricOr(t, c.HTTPAddr(1), "mure_files_hot_replicas") == 1
	})

	stopReads()
	testcluster.WaitFor(t, 20*time.Second, path+" cooled: back to its one copy on "+owner, func() bool {
		h := c.Nodes[1].Status().Files
		return validEverywhere(owner)() && h.HotHeld == 0 && h.HotDropped == 1
	})
	if got := scrapeMetricOr(t, c.HTTPAddr(1), "mure_files_hot_replicas_dropped_total"); got != 1 {
		t.Fatalf("mure_files_hot_replicas_dropped_total on %s = %v, want 1", reader, got)
	}
	mustGet(t, c.Client(1), path, "read me often")
}

// TestLinearizabilityWithHotReplicas is TestLinearizabilityUnderFaults
// with one copy per file and hot replicas quick to come and go: copies
// are added and dropped while nodes are killed, paused and cut off, and
// the history must stay linearizable.
func TestLinearizabilityWithHotReplicas(t *testing.T) {
	seededRuns(t, 6*time.Second, 20*time.Second, func(t *testing.T, seed int64, dur time.Duration) {
		// Rights released after each write: copies can be made between
		// writes (a right held suspends replication, hot copies too). The
		// clients read a file through a node some 5 to 20 times a second
		// (fewer on a loaded machine): around 4, copies come and go.
		settings := map[string]string{meta.CfgReplication: "1", meta.CfgResume: "immediate",
			meta.CfgHotReads: "4", meta.CfgHotWindow: "300ms", meta.CfgHotCool: "300ms", meta.CfgHotMax: "2"}
		h, c := runWithFaults(t, seed, dur, "", settings)
		checkLinearizable(t, h, true)
		var added, dropped float64
		for _, i := range c.Running() {
			added += scrapeMetricOr(t, c.HTTPAddr(i), "mure_files_hot_replicas_added_total")
			dropped += scrapeMetricOr(t, c.HTTPAddr(i), "mure_files_hot_replicas_dropped_total")
		}
		t.Logf("hot copies: %v added, %v dropped (nodes restarted during the run count from their restart)", added, dropped)
		if added < 1 {
			t.Fatal("no hot copy was added: the run did not exercise hot replicas")
		}
	})
}
