package systest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/dispatch"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
	"github.com/mure-dev/mure/internal/transport"
)

// frontAddr returns a loopback address no listener holds, for a front door
// that every node of a test cluster is configured with and only the role's
// holder binds (on one machine the port itself moves with the role, as a
// virtual IP would between machines).
func frontAddr(t *testing.T) string {
	t.Helper()
	return testcluster.FreeAddr(t)
}

// frontCluster starts n in-process nodes sharing a front door.
func frontCluster(t *testing.T, n int, fc frontdoor.Config) (*testcluster.Cluster, string) {
	t.Helper()
	if fc.Addr == "" {
		fc.Addr = frontAddr(t)
	}
	c := testcluster.Start(t, n, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		f := fc
		cfg.Front = &f
	}})
	waitFrontReady(t, c, fc.Addr, n)
	return c, fc.Addr
}

// waitFrontReady waits until the front door is open and its scheduler has
// fresh figures from n nodes.
func waitFrontReady(t *testing.T, c *testcluster.Cluster, addr string, n int) {
	t.Helper()
	testcluster.WaitFor(t, 10*time.Second, "front door open with every node's figures", func() bool {
		for _, i := range c.Running() {
			s := c.Nodes[i].Door().Status()
			if !s.Active {
				continue
			}
			fresh := 0
			for _, nl := range s.Nodes {
				if nl.Alive && !nl.At.IsZero() {
					fresh++
				}
			}
			return fresh == n && s.Addr == addr
		}
		return false
	})
}

// noFollow is a client that shows redirects and opens a new connection for
// every request, as a new client would.
func noFollow() *http.Client {
	return &http.Client{
		Transport:     testcluster.Authorize(&http.Transport{DisableKeepAlives: true}),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
}

// holderOf returns the index of the node whose front door is open.
func holderOf(t *testing.T, c *testcluster.Cluster) int {
	t.Helper()
	for _, i := range c.Running() {
		if c.Nodes[i].Door().Status().Active {
			return i
		}
	}
	t.Fatal("no node holds the front door")
	return -1
}

// TestFrontDoorRedirect: round robin sends successive new connections to
// each node in turn by 307; every request on one connection goes to the
// same node; the holder is the raft leader and says so in /status.
func TestFrontDoorRedirect(t *testing.T) {
	c, front := frontCluster(t, 3, frontdoor.Config{Mode: frontdoor.ModeRedirect, Policy: dispatch.NameRoundRobin})
	hc := noFollow()
	counts := map[string]int{}
	ids := map[string]bool{}
	for i := range c.Nodes {
		ids[c.Nodes[i].ID()] = true
	}
	const conns = 30
	for range conns {
		resp, err := hc.Get("http://" + front + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTemporaryRedirect {
			t.Fatalf("front door answered %d, want 307", resp.StatusCode)
		}
		id := resp.Header.Get("X-Mure-Node")
		if !ids[id] {
			t.Fatalf("redirected to unknown node %q", id)
		}
		loc := resp.Header.Get("Location")
		if !strings.HasSuffix(loc, "/healthz") {
			t.Fatalf("Location %q does not keep the path", loc)
		}
		// Following the redirect reaches that node.
		resp, err = hc.Get(loc)
		if err != nil {
			t.Fatal(err)
		}
		var hz map[string]string
		json.NewDecoder(resp.Body).Decode(&hz)
		resp.Body.Close()
		if hz["node"] != id {
			t.Fatalf("redirect to %s answered by %q", id, hz["node"])
		}
		counts[id]++
	}
	for id := range ids {
		if d := counts[id] - conns/len(ids); d < -1 || d > 1 {
			t.Fatalf("round robin spread %v over %d connections: %s is not within 1 of even", counts, conns, id)
		}
	}

	// Several requests on one kept-alive connection: one decision.
	conn, err := net.Dial("tcp", front)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	var first string
	for i := range 5 {
		fmt.Fprintf(conn, "GET /status HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", c.Token())
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if i == 0 {
			first = resp.Header.Get("X-Mure-Node")
		} else if got := resp.Header.Get("X-Mure-Node"); got != first {
			t.Fatalf("request %d on one connection went to %s, the first to %s", i, got, first)
		}
	}

	h := holderOf(t, c)
	if l := c.Leader(); l != h {
		t.Fatalf("front door open on node %d, raft leader is %d", h, l)
	}
	st := c.Nodes[(h+1)%3].Status()
	if st.Dispatch.Holder != c.Nodes[h].ID() || st.Dispatch.How != "raft-leader" {
		t.Fatalf("another node's status names holder %q (%s), want %s by raft-leader", st.Dispatch.Holder, st.Dispatch.How, c.Nodes[h].ID())
	}
	fs := c.Nodes[h].Door().Status()
	if got := fs.Decisions[dispatch.NameRoundRobin]; got != conns+1 {
		t.Fatalf("round robin decisions = %d, want %d", got, conns+1)
	}
	if m := scrapeMetric(t, c.HTTPAddr(h), `mure_dispatch_decisions_total{policy="round-robin"}`); m != conns+1 {
		t.Fatalf("metric mure_dispatch_decisions_total = %v, want %d", m, conns+1)
	}

	// The cluster-wide setting replaces the nodes' policy at once.
	if _, err := c.Client().SetConfig(ctxT(t), "dispatch.policy", dispatch.NameStaticHash); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 5*time.Second, "the holder follows dispatch.policy", func() bool {
		return c.Nodes[h].Door().Status().Policy == dispatch.NameStaticHash
	})
	resp, err := hc.Get("http://" + front + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := c.Nodes[h].Door().Status().Decisions[dispatch.NameStaticHash]; got != 1 {
		t.Fatalf("static-hash decisions after the switch = %d, want 1", got)
	}
}

// TestFrontDoorAffinity: with affinity, a client address goes back to the
// same node while its entry lives, and to the policy's choice after.
func TestFrontDoorAffinity(t *testing.T) {
	const ttl = 400 * time.Millisecond
	c, front := frontCluster(t, 2, frontdoor.Config{Mode: frontdoor.ModeRedirect, Policy: dispatch.NameRoundRobin, Affinity: ttl})
	hc := noFollow()
	node := func() string {
		resp, err := hc.Get("http://" + front + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("X-Mure-Node")
	}
	first := node()
	for i := range 10 {
		if got := node(); got != first {
			t.Fatalf("connection %d within the affinity TTL went to %s, the first to %s", i, got, first)
		}
	}
	// The TTL counts from the last connection: after a quiet TTL the entry
	// is gone and round robin moves on to the other node. (The sleep is
	// the condition under test, not a synchronisation.)
	time.Sleep(ttl + ttl/2)
	if got := node(); got == first {
		t.Fatalf("after the affinity TTL the client went back to %s; round robin should move on", got)
	}
	if got := c.Nodes[holderOf(t, c)].Door().Status().Decisions[dispatch.DecisionAffinity]; got < 10 {
		t.Fatalf("affinity decisions = %d, want at least 10", got)
	}
}

// TestFrontDoorProxy: in proxy mode the front door relays whole exchanges
// (a write and reads of a file), spreads connections by round robin, and a
// node refuses a relayed connection it cannot verify with 421.
func TestFrontDoorProxy(t *testing.T) {
	c, front := frontCluster(t, 3, frontdoor.Config{Mode: frontdoor.ModeProxy, Policy: dispatch.NameRoundRobin})
	hc := noFollow()
	counts := map[string]int{}
	for range 12 {
		resp, err := hc.Get("http://" + front + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		var hz map[string]string
		json.NewDecoder(resp.Body).Decode(&hz)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("healthz through the proxy: %d", resp.StatusCode)
		}
		counts[hz["node"]]++
	}
	if len(counts) != 3 || counts[c.Nodes[0].ID()] != 4 {
		t.Fatalf("round robin through the proxy: %v, want 4 on each of 3 nodes", counts)
	}
	// A file written and read through the front door (the client follows
	// the cluster's own redirects to the valid holder, through the front
	// door's relays to the nodes).
	body := strings.Repeat("front door ", 100000)
	req, _ := http.NewRequest(http.MethodPut, "http://"+front+"/files/fd/a", strings.NewReader(body))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT through the proxy: %d", resp.StatusCode)
	}
	follow := &http.Client{Transport: testcluster.Authorize(&http.Transport{DisableKeepAlives: true}), Timeout: 10 * time.Second}
	for range 3 {
		resp, err := follow.Get("http://" + front + "/files/fd/a")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(got) != body {
			t.Fatalf("GET through the proxy: %d, %d bytes", resp.StatusCode, len(got))
		}
	}
	// Connections went both to other nodes (relayed) and to the holder
	// itself (served without a relay).
	if s := c.Nodes[holderOf(t, c)].Door().Status(); s.Proxied+s.Local < 15 || s.Local == 0 || s.Proxied == 0 {
		got := fmt.Sprintf("%d relayed, %d served by the holder itself", s.Proxied, s.Local)
		t.Fatalf("%s: want ≥ 15, some of each", got)
	}

	key := clusterKey(t, c)
	h := holderOf(t, c)
	other := (h + 1) % 3
	client := netip.MustParseAddrPort("127.0.0.1:40000")
	for _, tc := range []struct {
		name     string
		preamble string
	}{
		{"wrong key", string(frontdoor.Preamble([]byte("not the cluster key"), c.Nodes[h].ID(), client, time.Now()))},
		{"not the dispatcher", string(frontdoor.Preamble(key, c.Nodes[other].ID(), client, time.Now()))},
		{"stale", string(frontdoor.Preamble(key, c.Nodes[h].ID(), client, time.Now().Add(-time.Hour)))},
		{"malformed", "MURE-HANDOVER/1 garbage\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", c.HTTPAddr(other))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "%sGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", tc.preamble)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			var e map[string]string
			json.NewDecoder(resp.Body).Decode(&e)
			if resp.StatusCode != http.StatusMisdirectedRequest || e["code"] != "misdirected" || e["error"] == "" {
				t.Fatalf("answer %d %v, want 421 misdirected with a message", resp.StatusCode, e)
			}
		})
	}
	// A valid preamble from the dispatcher is served, as the client.
	conn, err := net.Dial("tcp", c.HTTPAddr(other))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%sGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", frontdoor.Preamble(key, c.Nodes[h].ID(), client, time.Now()))
	resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a valid hand-over: %v %v", resp, err)
	}
}

// clusterKey reads the test cluster's hand-over key.
func clusterKey(t *testing.T, c *testcluster.Cluster) []byte {
	t.Helper()
	b, err := os.ReadFile(c.Nodes[0].KeyPath())
	if err != nil {
		t.Fatal(err)
	}
	k, err := transport.ParseKey(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return k.HandoverKey()
}
