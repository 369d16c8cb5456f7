package systest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/history"
	"github.com/mure-dev/mure/internal/testcluster"
)

// getHistory reads GET /history from node i's client port.
func getHistory(t *testing.T, c *testcluster.Cluster, i int, query string) (history.Dump, int) {
	t.Helper()
	hc := &http.Client{Transport: testcluster.Authorize(nil), Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + c.HTTPAddr(i) + "/history" + query)
	if err != nil {
		t.Fatalf("GET /history: %v", err)
	}
	defer resp.Body.Close()
	var d history.Dump
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
			t.Fatalf("decode /history: %v", err)
		}
	}
	return d, resp.StatusCode
}

// TestHistoryGathered: every node holds every node's history, pulled over
// the peer port; a killed node's past stays on the others, and a node
// that restarts gets the cluster's past back from its peers.
func TestHistoryGathered(t *testing.T) {
	c := testcluster.Start(t, 3)
	put(t, c.Client(0), "h/a", "hello")
	var d history.Dump
	served := func() bool { // node 0's own points count the requests it answered
		for _, p := range d.Nodes[c.ID(0)].Fine {
			if p.V[history.RequestRate] > 0 {
				return true
			}
		}
		return false
	}
	testcluster.WaitFor(t, 15*time.Second, "node 0 to hold 3 seconds of every node, and its own answered requests", func() bool {
		d, _ = getHistory(t, c, 0, "")
		for i := range c.Nodes {
			if len(d.Nodes[c.ID(i)].Fine) < 3 {
				return false
			}
		}
		return served()
	})
	for _, p := range d.Nodes[c.ID(0)].Fine {
		if !p.Known(history.DiskFree) || !p.Known(history.Files) || !p.Known(history.Mem) || !p.Known(history.SessionsRunning) {
			t.Fatalf("node 0's point has unknown figures: %+v", p)
		}
		// No proxy: no cache figures (the dashboard draws no cache panel).
		if p.Known(history.CacheHit) || p.Known(history.CacheHitRatio) {
			t.Fatalf("node 0 runs no proxy, yet its point has cache figures: %+v", p)
		}
	}

	dead := c.ID(2)
	before := len(d.Nodes[dead].Fine)
	c.Kill(2)
	killed := time.Now().Unix()
	testcluster.WaitFor(t, 10*time.Second, "node 0 to sample twice after the kill", func() bool {
		last, ok := c.Nodes[0].Monitor().History().Series(c.ID(0)).Last()
		return ok && last.T >= killed+2
	})
	d, _ = getHistory(t, c, 0, "?node="+dead)
	if got := len(d.Nodes[dead].Fine); got < before {
		t.Errorf("the killed node's history shrank on node 0: %d points, had %d", got, before)
	}

	// A restarted node takes the cluster's past back: the dead node's too.
	c.Kill(1)
	c.Restart(1)
	testcluster.WaitFor(t, 10*time.Second, "the restarted node to hold the killed node's past", func() bool {
		d, _ = getHistory(t, c, 1, "?node="+dead)
		return len(d.Nodes[dead].Fine) >= before
	})

	for _, q := range []string{"?since=yesterday", "?since=1.5"} {
		if _, code := getHistory(t, c, 0, q); code != http.StatusBadRequest {
			t.Errorf("GET /history%s: %d, want 400", q, code)
		}
	}
	if d, code := getHistory(t, c, 0, fmt.Sprintf("?since=%d", time.Now().Unix()+60)); code != http.StatusOK || len(d.Nodes[c.ID(0)].Fine) != 0 {
		t.Errorf("GET /history?since=(future): %d, %d points", code, len(d.Nodes[c.ID(0)].Fine))
	}
}
