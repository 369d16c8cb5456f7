package systest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

func TestTruncatedUploadKeepsOldVersion(t *testing.T) {
	c := testcluster.Start(t, 1)
	put(t, c.Client(), "doc", "old")
	conn, err := net.Dial("tcp", c.HTTPAddr(0))
	if err != nil {
		t.Fatal(err)
	}
	// Promise 1000 bytes, send 10, hang up.
	fmt.Fprintf(conn, "PUT /files/doc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n0123456789", c.Token())
	conn.Close()
	// The server notices the disconnect; the old version is all there is.
	testcluster.WaitFor(t, 5*time.Second, "the aborted upload to be cleaned up", func() bool {
		return c.Nodes[0].Status().Store.Blobs == 1
	})
	mustGet(t, c.Client(), "doc", "old")
	// A body that ends early on a kept-alive connection is refused clearly.
	req, _ := http.NewRequest(http.MethodPut, "http://"+c.HTTPAddr(0)+"/files/doc", io.LimitReader(strings.NewReader(strings.Repeat("x", 100)), 10))
	req.ContentLength = 100
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			t.Fatalf("short body accepted: %d", resp.StatusCode)
		}
	}
	mustGet(t, c.Client(), "doc", "old")
}

func TestTokenRequired(t *testing.T) {
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) { cfg.Token = "s3cret" }})
	cases := []struct {
		path, token string
		want        int
	}{
		{"/files/x", "", http.StatusUnauthorized},
		{"/files/x", "wrong", http.StatusUnauthorized},
		{"/files/x", "s3cret", http.StatusNotFound},
		{"/status", "", http.StatusUnauthorized},
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusOK},
		{"/metrics", "", http.StatusOK},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(http.MethodGet, "http://"+c.HTTPAddr(0)+tc.path, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := bare.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s with token %q: %d, want %d", tc.path, tc.token, resp.StatusCode, tc.want)
		}
	}
}

func TestMetricsExposed(t *testing.T) {
	c := testcluster.Start(t, 1)
	put(t, c.Client(), "m", "x")
	mustGet(t, c.Client(), "m", "x")
	resp, err := http.Get("http://" + c.HTTPAddr(0) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`mure_http_requests_total{code="201",method="PUT",route="/files/"} 1`,
		`mure_files_writes_total 1`,
		`mure_files_local_reads_total 1`,
		`mure_raft_leader 1`,
		`mure_files_replication_backlog_files 0`,
		`mure_http_request_duration_seconds_bucket`,
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestGracefulLeave(t *testing.T) {
	c := testcluster.Start(t, 3)
	put(t, c.Client(0), "x", "1")
	leaving := c.Nodes[2]
	leavingID := leaving.ID()
	resp, err := http.Post("http://"+c.HTTPAddr(2)+"/nodes/leave", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("leave: %d", resp.StatusCode)
	}
	select {
	case <-leaving.Left():
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not report that it left")
	}
	c.Kill(2)
	testcluster.WaitFor(t, 10*time.Second, "the others to record the departure", func() bool {
		for _, m := range c.Nodes[0].Cluster().Members() {
			if m.ID == leavingID {
				return m.State == "left" && m.Suffrage == "none"
			}
		}
		return false
	})
	put(t, c.Client(0, 1), "x", "2")
	mustGet(t, c.Client(1), "x", "2")
}

func TestVoterCountAndReplacement(t *testing.T) {
	c := testcluster.Start(t, 4)
	voters := func(from int) (v, nv int) {
		for _, m := range c.Nodes[from].Cluster().Members() {
			switch m.Suffrage {
			case "voter":
				v++
			case "nonvoter":
				nv++
			}
		}
		return
	}
	testcluster.WaitFor(t, 10*time.Second, "3 voters and 1 non-voter", func() bool { v, nv := voters(0); return v == 3 && nv == 1 })
	// Kill a voter that is not the leader: after the grace period the
	// non-voter takes its place.
	lead := c.Leader()
	victim := -1
	for _, m := range c.Nodes[lead].Cluster().Members() {
		if m.Suffrage == "voter" && !m.Leader {
			for i, nd := range c.Nodes {
				if nd.ID() == m.ID {
					victim = i
				}
			}
		}
	}
	victimID := c.Nodes[victim].ID()
	c.Kill(victim)
	testcluster.WaitFor(t, 20*time.Second, "a live non-voter promoted in place of the dead voter", func() bool {
		alive, victimVotes := 0, false
		for _, m := range c.Nodes[lead].Cluster().Members() {
			if m.Suffrage == "voter" && m.Gossip == "alive" {
				alive++
			}
			if m.ID == victimID && m.Suffrage == "voter" {
				victimVotes = true
			}
		}
		return alive == 3 && !victimVotes
	})
	// A fifth node makes five voters.
	c.Restart(victim)
	c.Add()
	testcluster.WaitFor(t, 20*time.Second, "5 voters with 5 nodes", func() bool { v, _ := voters(c.Leader()); return v == 5 })
}

func TestDiskFullKeepsOldVersion(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	var storeDir string
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.MaxBody = 8 << 20
		storeDir = filepath.Join(cfg.DataDir, "store")
		if err := os.MkdirAll(storeDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", storeDir).CombinedOutput(); err != nil {
			t.Skipf("cannot mount tmpfs: %v %s", err, out)
		}
	}})
	t.Cleanup(func() { exec.Command("umount", "-l", storeDir).Run() })
	old := strings.Repeat("o", 1<<20)
	put(t, c.Client(), "big", old)
	req, _ := http.NewRequest(http.MethodPut, "http://"+c.HTTPAddr(0)+"/files/big", bytes.NewReader(make([]byte, 3<<20)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInsufficientStorage || !strings.Contains(string(b), `"code":"no_space"`) {
		t.Fatalf("write to a full disk: %d %s, want 507 no_space", resp.StatusCode, b)
	}
	mustGet(t, c.Client(), "big", old)
}
