package systest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/testcluster"
)

// frontStatus is the part of /status these tests read.
type frontStatus struct {
	Node struct {
		ID string `json:"id"`
	} `json:"node"`
	Dispatch struct {
		Holder string `json:"holder"`
		How    string `json:"how"`
		Front  *struct {
			Active  bool  `json:"active"`
			Proxied int64 `json:"proxied"`
			Broken  int64 `json:"broken"`
		} `json:"front"`
	} `json:"dispatch"`
}

func procFrontStatus(c *testcluster.ProcCluster, i int) (*frontStatus, error) {
	hc := &http.Client{Transport: testcluster.Authorize(nil), Timeout: time.Second}
	resp, err := hc.Get("http://" + c.HTTPAddr(i) + "/status")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st frontStatus
	return &st, json.NewDecoder(resp.Body).Decode(&st)
}

// procHolder waits until one running node's front door is open and
// returns its index.
func procHolder(t *testing.T, c *testcluster.ProcCluster) int {
	t.Helper()
	h := -1
	testcluster.WaitFor(t, 15*time.Second, "a node with its front door open", func() bool {
		for _, i := range c.Running() {
			if st, err := procFrontStatus(c, i); err == nil && st.Dispatch.Front != nil && st.Dispatch.Front.Active {
				h = i
				return true
			}
		}
		return false
	})
	return h
}

// frontCanConnect reports whether a new connection to the front door is
// answered by a live node (following the front door's redirect: a
// redirect to a dead node is a failed connection for the client).
func frontCanConnect(front string) bool {
	hc := &http.Client{Transport: testcluster.Authorize(&http.Transport{DisableKeepAlives: true}), Timeout: 300 * time.Millisecond}
	resp, err := hc.Get("http://" + front + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// measureWindow polls new connections to the front door every 5 ms from
// since until 6 in a row succeed (every node of a round robin twice), and
// returns how long after since the first of those began: until then some
// new connections failed (the role had not moved, or the policy still sent
// them to a node gossip had not yet found dead).
func measureWindow(t *testing.T, front string, since time.Time) time.Duration {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var first time.Time
	for ok := 0; ok < 6; {
		if time.Now().After(deadline) {
			t.Fatal("new connections through the front door did not all succeed within 20 s of the kill")
		}
		start := time.Now()
		if frontCanConnect(front) {
			if ok == 0 {
				first = start
			}
			ok++
			continue
		}
		ok = 0
		time.Sleep(5 * time.Millisecond)
	}
	return first.Sub(since)
}

// slowDownload is one long transfer through the front door.
type slowDownload struct {
	node    string // the node serving it
	started chan struct{}
	err     error
	sum     [32]byte
	n       int64
}

// startSlowDownloads starts k downloads of path through the front door,
// each on its own new connection, reading 64 KiB every 4 ms so that they
// last a few seconds. follow: redirect mode (the 307 names the node, the
// transfer goes there); otherwise the transfer is relayed.
func startSlowDownloads(ctx context.Context, front, path string, k int, follow bool) ([]*slowDownload, *sync.WaitGroup) {
	var wg sync.WaitGroup
	var out []*slowDownload
	for range k {
		d := &slowDownload{started: make(chan struct{})}
		out = append(out, d)
		wg.Go(func() {
			hc := &http.Client{Transport: testcluster.Authorize(&http.Transport{DisableKeepAlives: true}),
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			url := "http://" + front + path
			if follow {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				resp, err := hc.Do(req)
				if err != nil {
					d.err = err
					close(d.started)
					return
				}
				resp.Body.Close()
				d.node, url = resp.Header.Get("X-Mure-Node"), resp.Header.Get("Location")
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := hc.Do(req)
			if err != nil {
				d.err = err
				close(d.started)
				return
			}
			defer resp.Body.Close()
			if d.node == "" {
				d.node = resp.Header.Get("X-Mure-Node")
			}
			h := sha256.New()
			buf := make([]byte, 64<<10)
			once := sync.Once{}
			for {
				n, err := io.ReadFull(resp.Body, buf)
				h.Write(buf[:n])
				d.n += int64(n)
				once.Do(func() { close(d.started) })
				if err == io.EOF || err == io.ErrUnexpectedEOF {
					break
				}
				if err != nil {
					d.err = err
					break
				}
				time.Sleep(4 * time.Millisecond) // a slow reader: pacing, not synchronisation
			}
			copy(d.sum[:], h.Sum(nil))
		})
	}
	return out, &wg
}

// putEverywhere writes a file and waits until every node serves it from its
// own copy (replication resumed at once).
func putEverywhere(t *testing.T, c *testcluster.ProcCluster, path string, body []byte) {
	t.Helper()
	ctx := ctxT(t)
	cl := c.Client()
	if _, err := cl.SetConfig(ctx, "resume", "immediate"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Put(ctx, path, bytes.NewReader(body), nil); err != nil {
		t.Fatal(err)
	}
	for _, i := range c.Running() {
		testcluster.WaitFor(t, 15*time.Second, fmt.Sprintf("%s served by node %d", path, i), func() bool {
			status, _, err := noRedirect(ctx, c.HTTPAddr(i), path)
			return err == nil && status == http.StatusOK
		})
	}
}

func frontArgs(front, mode string) []string {
	return []string{"--front", front, "--front-mode", mode, "--front-policy", "round-robin"}
}

// failover is what killHolderDuring leaves for a test to check.
type failover struct {
	c         *testcluster.ProcCluster
	front     string
	holderID  string
	downloads []*slowDownload
	want      [32]byte
	window    time.Duration
}

// killHolderDuring starts 3 node processes with a front door in mode,
// starts k slow 12 MiB downloads through it, kills the holder's node once
// all have begun, and returns when the downloads are over, with how long
// new connections failed.
func killHolderDuring(t *testing.T, mode string, k int) failover {
	t.Helper()
	front := frontAddr(t)
	c := testcluster.StartProc(t, 3, frontArgs(front, mode)...)
	body := randomBytes(12<<20, uint64(k))
	putEverywhere(t, c, "fd/big", body)
	h := procHolder(t, c)
	r := failover{c: c, front: front, holderID: c.ID(h), want: sha256.Sum256(body)}
	var wg *sync.WaitGroup
	r.downloads, wg = startSlowDownloads(ctxT(t), front, "/files/fd/big", k, mode == "redirect")
	for _, d := range r.downloads {
		<-d.started
	}
	killed := time.Now()
	c.Kill(h)
	r.window = measureWindow(t, front, killed)
	wg.Wait()
	return r
}

// TestProcFrontDoorFailoverRedirect: the dispatcher's node is killed while
// transfers it handed over by redirect are running: those on other nodes
// finish intact; new connections fail only until another node opens the
// front door (the window is printed).
func TestProcFrontDoorFailoverRedirect(t *testing.T) {
	r := killHolderDuring(t, "redirect", 6)
	c, downloads, holderID, want, window := r.c, r.downloads, r.holderID, r.want, r.window
	intact, onHolder := 0, 0
	for _, d := range downloads {
		if d.node == holderID {
			onHolder++ // the dead node's own transfers die with it
			continue
		}
		if d.err != nil || d.sum != want {
			t.Errorf("a transfer handed over to %s before the dispatcher died broke: %v (%d bytes)", d.node, d.err, d.n)
			continue
		}
		intact++
	}
	if intact < 3 {
		t.Fatalf("only %d transfers on surviving nodes (of %d)", intact, len(downloads))
	}
	nh := procHolder(t, c)
	st, err := procFrontStatus(c, nh)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("redirect mode: dispatcher %s killed; %d transfers on other nodes finished intact (%d were on the dead node); new connections failed for %v; new holder %s (%s)",
		holderID, intact, onHolder, window.Round(time.Millisecond), st.Dispatch.Holder, st.Dispatch.How)
}

// TestProcFrontDoorFailoverProxy: in proxy mode the relays die with the
// dispatcher's node (expected: it is on the data path); their number and
// the window of failed new connections are printed; after the takeover
// relayed transfers work again.
func TestProcFrontDoorFailoverProxy(t *testing.T) {
	r := killHolderDuring(t, "proxy", 4)
	c, downloads, want, window, front, ctx := r.c, r.downloads, r.want, r.window, r.front, ctxT(t)
	broken := 0
	for _, d := range downloads {
		if d.err != nil || d.sum != want {
			broken++
		}
	}
	// Once the survivors agree on the new holder, relayed transfers work.
	nh := procHolder(t, c)
	testcluster.WaitFor(t, 10*time.Second, "the survivors to name the new holder", func() bool {
		for _, i := range c.Running() {
			if st, err := procFrontStatus(c, i); err != nil || st.Dispatch.Holder != c.ID(nh) {
				return false
			}
		}
		return true
	})
	// File reads need a read lease from the new raft leader: until a node
	// holds one it redirects, which this no-follow client counts as failed.
	for _, i := range c.Running() {
		c.WaitReady(i)
	}
	after, wg2 := startSlowDownloads(ctx, front, "/files/fd/big", 2, false)
	wg2.Wait()
	for _, d := range after {
		if d.err != nil || d.sum != want {
			t.Fatalf("a relayed transfer after the takeover failed: %v (%d bytes)", d.err, d.n)
		}
	}
	t.Logf("proxy mode: dispatcher killed; %d of %d relayed transfers broke (expected: all, the relay is on the data path); new connections failed for %v",
		broken, len(downloads), window.Round(time.Millisecond))
	if broken == 0 {
		t.Fatal("no relayed transfer broke when its relay was killed: were they relayed at all?")
	}
}

// TestProcFrontDoorLastNode: a 3-node cluster with 2 nodes killed (the
// dispatcher among them) still accepts new connections: without a quorum
// the role falls to the lowest live member in the gossip view.
func TestProcFrontDoorLastNode(t *testing.T) {
	front := frontAddr(t)
	c := testcluster.StartProc(t, 3, frontArgs(front, "redirect")...)
	h := procHolder(t, c)
	survivor := (h + 1) % 3
	killed := time.Now()
	for i := range 3 {
		if i != survivor {
			c.Kill(i)
		}
	}
	window := measureWindow(t, front, killed)
	st, err := procFrontStatus(c, survivor)
	if err != nil {
		t.Fatal(err)
	}
	if st.Dispatch.Holder != c.ID(survivor) || st.Dispatch.How != "lowest-alive" {
		t.Fatalf("the last node names holder %q (%s), want itself by lowest-alive", st.Dispatch.Holder, st.Dispatch.How)
	}
	// The connection goes to the last node, which answers.
	resp, err := http.Get("http://" + front + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), c.ID(survivor)) {
		t.Fatalf("through the front door with one node left: %d %s", resp.StatusCode, b)
	}
	t.Logf("2 of 3 nodes killed (the dispatcher among them): new connections failed for %v, then the last node held the role (%s)",
		window.Round(time.Millisecond), st.Dispatch.How)
}

// TestProcFrontDoorMemberDeath: a node that does not hold the role is killed.
// With the holder's probes (the default) the dead node gets no new connection
// once a dial to its client port is refused; without them, only once gossip
// suspects it. Both windows are printed; new connections all succeed after
// each.
func TestProcFrontDoorMemberDeath(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
	}{{"probes", nil}, {"gossip only", []string{"--front-probe", "0"}}} {
		t.Run(tc.name, func(t *testing.T) {
			front := frontAddr(t)
			c := testcluster.StartProc(t, 3, append(frontArgs(front, "redirect"), tc.extra...)...)
			h := procHolder(t, c)
			member := (h + 1) % 3
			measureWindow(t, front, time.Now()) // every node answers first
			killed := time.Now()
			c.Kill(member)
			window := measureWindow(t, front, killed)
			if nh := procHolder(t, c); nh != h {
				t.Fatalf("the role moved from %s to %s when a member died", c.ID(h), c.ID(nh))
			}
			t.Logf("redirect mode, %s: member %s killed; new connections failed for %v", tc.name, c.ID(member), window.Round(time.Millisecond))
		})
	}
}
