package systest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/files"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestReadNearestZone runs four nodes in two zones with two copies of a
// file, one in each zone: a read through a node without a copy goes to
// the holder in its own zone — redirected, forwarded, and as FileStatus's
// read order says (docs/decisions/0036). The two readers are in different
// zones, so no order that ignores zones passes for both.
func TestReadNearestZone(t *testing.T) {
	zones := []string{"a", "a", "b", "b"}
	c := testcluster.Start(t, len(zones), testcluster.Options{Setup: func(i int, cfg *node.Config) { cfg.Zone = zones[i] }})
	ctx := ctxT(t)
	for _, kv := range [][2]string{{"replication", "2"}, {"resume", "immediate"}} {
		if _, err := c.Client(0).SetConfig(ctx, kv[0], kv[1]); err != nil {
			t.Fatalf("config %s=%s: %v", kv[0], kv[1], err)
		}
	}
	zoneOf := map[string]string{}
	for i, nd := range c.Nodes {
		zoneOf[nd.ID()] = zones[i]
	}
	testcluster.WaitFor(t, 10*time.Second, "every node to see every zone", func() bool {
		for _, nd := range c.Nodes {
			for _, m := range nd.Cluster().Members() {
				if m.Zone != zoneOf[m.ID] {
					return false
				}
			}
		}
		return true
	})

	// Write until a file's two copies sit in different zones (where the
	// second copy goes is the catalogue's choice), bounded.
	var path string
	var valid []string
	for k := 0; k < 20 && path == ""; k++ {
		p := fmt.Sprint("near/", k)
		put(t, c.Client(k%len(zones)), p, "payload "+p)
		waitTwoCopies(t, c, p)
		v := c.Nodes[0].Cluster().FSM().File(p).Valid
		if zoneOf[v[0]] != zoneOf[v[1]] {
			path, valid = p, slices.Clone(v)
		}
	}
	if path == "" {
		t.Fatal("20 files, none with its copies in both zones")
	}
	holderIn := map[string]string{zoneOf[valid[0]]: valid[0], zoneOf[valid[1]]: valid[1]}

	readers := 0
	for i, nd := range c.Nodes {
		if slices.Contains(valid, nd.ID()) {
			continue
		}
		readers++
		want := holderIn[zones[i]]
		t.Run(fmt.Sprintf("through %s in zone %s", nd.ID(), zones[i]), func(t *testing.T) {
			for range 4 { // the round robin this replaced alternated
				resp := rawGet(t, c.HTTPAddr(i), path)
				if got := resp.Header.Get("X-Mure-Redirect"); resp.StatusCode != http.StatusTemporaryRedirect || got != want {
					t.Fatalf("GET: %d to %q, want 307 to %s (same zone); copies on %v", resp.StatusCode, got, want, valid)
				}
			}
			req, _ := http.NewRequest(http.MethodGet, "http://"+c.HTTPAddr(i)+"/files/"+path, nil)
			req.Header.Set("X-Mure-Forward", "1")
			resp, err := (&http.Client{Transport: testcluster.Authorize(nil)}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got := resp.Header.Get("X-Mure-Forwarded-From"); resp.StatusCode != http.StatusOK || got != want || string(body) != "payload "+path {
				t.Fatalf("forwarded GET: %d from %q, %q; want 200 from %s (same zone)", resp.StatusCode, got, body, want)
			}
			if order := readOrderAt(ctx, t, c, i, path); len(order) != 2 || order[0].Node != want || !strings.HasPrefix(order[0].Reason, "same zone "+zones[i]) {
				t.Fatalf("read order %+v, want %s first, same zone %s", order, want, zones[i])
			}
		})
	}
	if readers != 2 {
		t.Fatalf("%d nodes without a copy, want 2", readers)
	}
}

// TestReadNearestRTT runs three nodes without zones and a file with two
// copies: the node without a copy reads from the holder it measures
// nearer by gossip's round trips (decision 0041), whichever that is. One
// holder's gossip is delayed by 20 ms (the transport's seam: every
// probe's ack from it is late; under the fast timing's 50 ms probe
// timeout), then the delay moves to the other holder and the reads follow
// it; load figures cannot flip with it.
func TestReadNearestRTT(t *testing.T) {
	c := testcluster.Start(t, 3)
	ctx := ctxT(t)
	for _, kv := range [][2]string{{"replication", "2"}, {"resume", "immediate"}} {
		if _, err := c.Client(0).SetConfig(ctx, kv[0], kv[1]); err != nil {
			t.Fatalf("config %s=%s: %v", kv[0], kv[1], err)
		}
	}
	const path = "near/rtt"
	put(t, c.Client(0), path, "payload")
	waitTwoCopies(t, c, path)
	valid := c.Nodes[0].Cluster().FSM().File(path).Valid
	reader, holders := -1, map[string]int{}
	for i, nd := range c.Nodes {
		if slices.Contains(valid, nd.ID()) {
			holders[nd.ID()] = i
		} else {
			reader = i
		}
	}
	const delay = 20 * time.Millisecond
	for round, far := range valid {
		near := valid[1-round]
		c.Nodes[holders[near]].Transport().SetGossipDelay(0)
		c.Nodes[holders[far]].Transport().SetGossipDelay(delay)
		var got []files.ReadChoice
		testcluster.WaitFor(t, 20*time.Second, fmt.Sprintf("round %d: %s measured nearer than %s (delayed)", round, near, far), func() bool {
			got = readOrderAt(ctx, t, c, reader, path)
			return len(got) == 2 && got[0].Node == near && got[0].RTTMillis > 0 && got[1].RTTMillis >= float64(delay.Milliseconds())
		})
		if !strings.Contains(got[0].Reason, "rtt ") {
			t.Fatalf("round %d: reason %q does not give the round trip", round, got[0].Reason)
		}
		resp := rawGet(t, c.HTTPAddr(reader), path)
		if to := resp.Header.Get("X-Mure-Redirect"); resp.StatusCode != http.StatusTemporaryRedirect || to != near {
			t.Fatalf("round %d: GET through %s: %d to %q, want 307 to %s (nearer than %s); order %+v", round, c.ID(reader), resp.StatusCode, to, near, far, got)
		}
		t.Logf("round %d: read order from %s: %+v", round, c.ID(reader), got)
	}
}

// waitTwoCopies waits until every node sees path released with two valid
// copies.
func waitTwoCopies(t *testing.T, c *testcluster.Cluster, path string) {
	t.Helper()
	testcluster.WaitFor(t, 10*time.Second, path+" replicated to two nodes, everywhere", func() bool {
		for _, nd := range c.Nodes {
			f := nd.Cluster().FSM().File(path)
			if f == nil || f.Suspended() || len(f.Valid) != 2 {
				return false
			}
		}
		return true
	})
}

// readOrderAt is the read order of path that node i's FileStatus gives.
func readOrderAt(ctx context.Context, t *testing.T, c *testcluster.Cluster, i int, path string) []files.ReadChoice {
	t.Helper()
	raw, err := c.Client(i).FileStatus(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		ReadOrder []files.ReadChoice `json:"read_order"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	return st.ReadOrder
}
