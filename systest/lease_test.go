package systest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestNoLeaseAnswer: a node cut off from the others loses its read lease;
// asked for a file whose only copy it holds, it must not serve it (it
// cannot know it is current) and must say why — no_quorum, not "no node
// holds a copy" — and serve it again once healed.
func TestNoLeaseAnswer(t *testing.T) {
	c := testcluster.Start(t, 3, testcluster.Options{Setup: func(i int, cfg *node.Config) { cfg.DebugFaults = true }})
	ctx := ctxT(t)
	cl := c.Client(0)
	for k, v := range map[string]string{"durability": "local", "resume": "reads", "resume.reads": "100"} {
		if _, err := cl.SetConfig(ctx, k, v); err != nil {
			t.Fatalf("config %s: %v", k, err)
		}
	}
	i := (c.Leader() + 1) % 3 // a follower: its copy stays the only one
	// The write reads the durability setting from i's own state: had i
	// not applied the settings yet, it would push a standby copy to
	// another node, which would then answer for the isolated one through a
	// redirect (docs/reliability.md, "The isolation seam").
	if err := c.Nodes[i].Cluster().CatchUp(ctx); err != nil {
		t.Fatalf("catch up node %d: %v", i, err)
	}
	put(t, c.Client(i), "nq/x", "only here")
	addr := "http://" + c.HTTPAddr(i)
	isolate := func(on string) {
		resp, err := http.Post(addr+"/debug/isolate?on="+on, "", nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("isolate=%s: %v %v", on, err, resp)
		}
		resp.Body.Close()
	}
	// Node i's own answer: a redirect is not followed.
	hc := &http.Client{Transport: testcluster.Authorize(nil), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	read := func() (int, string, string) {
		resp, err := hc.Get(addr + "/files/nq/x")
		if err != nil {
			return 0, "", ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var e struct{ Code string }
		json.Unmarshal(b, &e)
		return resp.StatusCode, e.Code, fmt.Sprintf("%s (judged %s, location %q)", b, resp.Header.Get("X-Mure-Judged"), resp.Header.Get("Location"))
	}
	testcluster.WaitFor(t, 10*time.Second, "the write to be visible on its node", func() bool {
		status, _, _ := read()
		return status == 200
	})
	if f := c.Nodes[i].Cluster().FSM().File("nq/x"); f == nil || !slices.Equal(f.Valid, []string{c.Nodes[i].ID()}) {
		t.Fatalf("the file should have one copy, on node %d (%s): %+v", i, c.Nodes[i].ID(), f)
	}
	isolate("1")
	var status int
	var code, body string
	testcluster.WaitFor(t, 20*time.Second, "the isolated node to stop serving its copy", func() bool {
		status, code, body = read()
		return status != http.StatusOK
	})
	if status != http.StatusServiceUnavailable || code != "no_quorum" {
		t.Fatalf("an isolated node answered %d %s, want 503 with code no_quorum", status, body)
	}
	isolate("0")
	testcluster.WaitFor(t, 20*time.Second, "the healed node to serve its copy again", func() bool {
		status, _, body := read()
		return status == 200 && strings.HasPrefix(body, "only here ")
	})
}

// TestLeasesOutliveLeadership: a leader that steps down still knows the
// leases it granted until they expire. A write it committed just before
// stepping down runs its invalidation barrier afterwards; if the step-down
// had emptied the table, the barrier would skip nodes that can still serve
// the old version under those leases (a stale read).
func TestLeasesOutliveLeadership(t *testing.T) {
	c := testcluster.Start(t, 3)
	c.WaitMembers(3)
	for attempt := 0; ; attempt++ {
		old := c.Leader()
		f := (old + 1) % 3
		c.WaitReady(f)
		fid := c.Nodes[f].Cluster().NodeID()
		oc := c.Nodes[old].Cluster()
		var d0 time.Time
		testcluster.WaitFor(t, 10*time.Second, "the leader to record the follower's lease", func() bool {
			var ok bool
			d0, ok = oc.LeaseDeadline(fid)
			return ok
		})
		if err := oc.TransferLeadership(); err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		testcluster.WaitFor(t, 10*time.Second, "another node to lead", func() bool {
			for _, i := range c.Running() {
				if i != old && c.Nodes[i].Cluster().IsLeader() {
					return !oc.IsLeader()
				}
			}
			return false
		})
		d, ok := oc.LeaseDeadline(fid)
		if time.Now().Before(d0) {
			if !ok || d.Before(d0) {
				t.Fatalf("the deposed leader forgot a lease it granted that is still valid: deadline %v (known %v), granted until %v", d, ok, d0)
			}
			return
		}
		if attempt == 4 {
			t.Fatal("the hand-over outlasted the lease in 5 attempts; the property was never checked")
		}
	}
}

// TestReadsNotBouncedWithoutLeases: with no node holding a read lease (two
// of three cut off, so nobody has a quorum) and a valid copy on every
// node, a read at any node must not bounce between them until the hop
// limit (508 redirect_loop; seen under heavy load, when leases lapse in an
// election): it is sent on at most once, and the node it reaches answers
// 503 no_quorum, which clients retry. Once healed, every node serves it.
func TestReadsNotBouncedWithoutLeases(t *testing.T) {
	c := testcluster.Start(t, 3, testcluster.Options{Setup: func(i int, cfg *node.Config) { cfg.DebugFaults = true }})
	ctx := ctxT(t)
	if _, err := c.Client(0).SetConfig(ctx, "resume", "immediate"); err != nil {
		t.Fatal(err)
	}
	put(t, c.Client(0), "bl/x", "everywhere")
	testcluster.WaitFor(t, 20*time.Second, "a valid copy on every node, in every node's view", func() bool {
		for i := range 3 {
			if f := c.Nodes[i].Cluster().FSM().File("bl/x"); f == nil || len(f.Valid) != 3 {
				return false
			}
		}
		return true
	})
	isolate := func(i int, on string) {
		resp, err := http.Post("http://"+c.HTTPAddr(i)+"/debug/isolate?on="+on, "", nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("node %d isolate=%s: %v %v", i, on, err, resp)
		}
		resp.Body.Close()
	}
	isolate(1, "1")
	isolate(2, "1")
	testcluster.WaitFor(t, 20*time.Second, "every node to lose its read lease", func() bool {
		for i := range 3 {
			if c.Nodes[i].Cluster().HasReadLease() {
				return false
			}
		}
		return true
	})
	// read follows redirects like a browser, counting them.
	read := func(i int) (status int, code string, redirects int) {
		hc := &http.Client{Transport: testcluster.Authorize(nil), Timeout: 20 * time.Second,
			CheckRedirect: func(_ *http.Request, via []*http.Request) error {
				redirects = len(via)
				return nil
			}}
		resp, err := hc.Get("http://" + c.HTTPAddr(i) + "/files/bl/x")
		if err != nil {
			t.Fatalf("read at node %d: %v", i, err)
		}
		defer resp.Body.Close()
		var e struct{ Code string }
		json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Code, redirects
	}
	for i := range 3 {
		status, code, redirects := read(i)
		if status != http.StatusServiceUnavailable || code != "no_quorum" || redirects > 1 {
			t.Errorf("read at node %d without leases: %d %s after %d redirects; want 503 no_quorum after at most 1", i, status, code, redirects)
		}
	}
	isolate(1, "0")
	isolate(2, "0")
	for i := range 3 {
		testcluster.WaitFor(t, 20*time.Second, fmt.Sprintf("node %d to serve the file again", i), func() bool {
			status, _, _ := read(i)
			return status == http.StatusOK
		})
	}
}
