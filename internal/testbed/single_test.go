package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/testcluster"
)

// TestSingleAddress: three nodes own one address on a hub-mode client
// network (paper 001's TCP-DSC on a stock kernel). Client hosts open new
// connections to it; the master (the dispatcher role's holder) taps each
// client SYN and sends it, by round robin, to a node, which injects it into
// its TUN device and answers the client directly. Every answer is checked
// (status 200, the body of a /healthz), and the connections spread within
// one of even.
func TestSingleAddress(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("testbed unavailable here: %v", err)
	}
	for _, tool := range []string{"iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/test.sh installs it)", tool)
		}
	}
	const prefix = "mtbs-"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := Config{
		Servers: 3, Clients: 2, ServerLink: "100mbit", ClientLink: "300mbit", ServerCPU: 0.2, ClientCPU: 0.2,
		Binary: testcluster.BuildBinary(t), Hub: true,
		Prefix: prefix, Subnet: "10.77.194.0/24", Dir: t.TempDir() + "/tb", DataMB: 64,
	}
	cip := "10.77.195.10"
	cfg.NodeArgs = []string{"--timing", "fast", "--front", cip + ":8080", "--front-mode", "single-address",
		"--front-vip", cip + "/24", "--front-iface", "eth1", "--front-policy", "round-robin"}
	tb, err := Up(ctx, cfg)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	defer tb.Down(context.Background())
	if got := tb.ClusterAddr(); got != cip {
		t.Fatalf("cluster address %s, want %s", got, cip)
	}
	waitFor(t, "a SYN master", func() bool {
		for _, h := range tb.Servers() {
			if st, err := singleStatus(ctx, h); err == nil && st.Master {
				return true
			}
		}
		return false
	})

	// 15 new connections from each client host, one after the other.
	const perClient = 15
	for _, c := range tb.Clients() {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		report := filepath.Join(t.TempDir(), "conn.json")
		out, err := tb.Command(cctx, c, cfg.Binary, "bench", "conn-rate", "--url", "http://"+cip+":8080/healthz",
			"--node", tb.ServerHTTP()[0], "--clients", "1", "--count", fmt.Sprint(perClient), "--duration", "0",
			"--timeout", "5s", "--json", report).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("connections from %s: %v\n%s", c.Name, err, out)
		}
		var rep struct {
			Groups []struct {
				Requests, Errors int64
				ErrorKinds       map[string]int64 `json:"error_kinds"`
			} `json:"groups"`
		}
		b, _ := os.ReadFile(report)
		if err := json.Unmarshal(b, &rep); err != nil || len(rep.Groups) != 1 {
			t.Fatalf("report of %s: %v\n%s", c.Name, err, out)
		}
		if g := rep.Groups[0]; g.Errors != 0 || g.Requests < perClient {
			t.Fatalf("from %s: %d requests, %d errors %v\n%s", c.Name, g.Requests, g.Errors, g.ErrorKinds, out)
		}
	}
	total, counts := 0, map[string]uint64{}
	for _, h := range tb.Servers() {
		st, err := singleStatus(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		counts[h.Name] = st.Injected
		total += int(st.Injected)
	}
	want := 2 * perClient
	if total < want {
		t.Fatalf("nodes injected %d SYNs for %d connections: %v", total, want, counts)
	}
	for name, n := range counts {
		if d := int(n) - total/3; d < -1 || d > 1 {
			t.Fatalf("round robin over 3 nodes: %v (%s not within 1 of even)", counts, name)
		}
	}
	t.Logf("%d connections to %s: SYNs injected per node %v", want, cip, counts)
}

type singleStats struct {
	Master   bool   `json:"master"`
	Injected uint64 `json:"injected"`
	Tapped   uint64 `json:"tapped"`
	Refused  uint64 `json:"refused"`
}

// singleStatus asks the node of h for its single-address counters.
func singleStatus(ctx context.Context, h *Host) (singleStats, error) {
	var st struct {
		Dispatch struct {
			Single *singleStats `json:"single_address"`
		} `json:"dispatch"`
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+h.HTTP()+"/status", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return singleStats{}, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Dispatch.Single == nil {
		return singleStats{}, fmt.Errorf("status of %s: no single-address counters (%v)", h.Name, err)
	}
	return *st.Dispatch.Single, nil
}
