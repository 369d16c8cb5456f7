package testbed

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/testcluster"
)

// TestTestbedFrontDoorVIP: the front door's virtual IP moves with the
// dispatcher role between emulated hosts. A client host reaches the
// cluster through the VIP; the holder's node is killed; the VIP leaves the
// dead host by itself (its lifetime runs out), appears on the new holder's
// interface, gratuitous ARP points the client at it, and the client gets
// through again (the time is printed).
func TestTestbedFrontDoorVIP(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("testbed unavailable here: %v", err)
	}
	if _, err := exec.LookPath("arping"); err != nil {
		t.Skip("arping not installed (scripts/test.sh installs it)")
	}
	const prefix, vip = "mtbv-", "10.77.198.100"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := Config{
		Servers: 3, Clients: 1, ServerLink: "100mbit", ClientLink: "450mbit", ServerCPU: 0.2, ClientCPU: 0.2,
		Binary: testcluster.BuildBinary(t),
		NodeArgs: []string{"--timing", "fast", "--front", vip + ":8080", "--front-vip", vip + "/24", "--front-iface", "eth0",
			"--front-mode", "redirect", "--front-policy", "round-robin"},
		Prefix: prefix, Subnet: "10.77.198.0/24", Dir: t.TempDir() + "/tb", Disk: DiskTmpfs, DataMB: 64, // the network is tested here
	}
	tb, err := Up(ctx, cfg)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	defer tb.Down(context.Background())
	client := tb.Clients()[0]

	// through asks the cluster, from the client host, through the VIP
	// (the CLI follows the front door's redirect to a node).
	through := func() (holder string, ok bool) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		out, err := tb.Command(cctx, client, cfg.Binary, "status", "--json", "--node", vip+":8080").Output()
		if err != nil {
			return "", false
		}
		var st struct {
			Dispatch struct {
				Holder string `json:"holder"`
			} `json:"dispatch"`
		}
		return st.Dispatch.Holder, json.Unmarshal(out, &st) == nil && st.Dispatch.Holder != ""
	}
	var old string
	waitFor(t, "the cluster through the VIP", func() bool {
		h, ok := through()
		old = h
		return ok
	})
	hosts := map[string]*Host{}
	for _, h := range tb.Servers() {
		hosts[nodeID(ctx, t, h)] = h
	}
	dead := hosts[old]
	if dead == nil || !hasAddr(ctx, t, dead, vip) {
		t.Fatalf("holder %s: host unknown or without the VIP", old)
	}
	if err := tb.Signal(dead, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var holder string
	waitFor(t, "a new holder through the VIP", func() bool {
		h, ok := through()
		holder = h
		return ok && h != old
	})
	window := time.Since(killed)
	if !hasAddr(ctx, t, hosts[holder], vip) {
		t.Fatalf("new holder %s answers but does not have the VIP", holder)
	}
	waitFor(t, "the VIP to expire on the dead holder's host", func() bool { return !hasAddr(ctx, t, dead, vip) })
	t.Logf("VIP %s moved from %s (killed) to %s: the client got through again after %v; the dead host dropped it after %v",
		vip, old, holder, window.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
}

// nodeID asks the node of h its ID.
func nodeID(ctx context.Context, t *testing.T, h *Host) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+h.HTTP()+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("healthz of %s: %v", h.Name, err)
	}
	defer resp.Body.Close()
	var hz map[string]string
	json.NewDecoder(resp.Body).Decode(&hz)
	return hz["node"]
}

// hasAddr reports whether host h's eth0 carries addr.
func hasAddr(ctx context.Context, t *testing.T, h *Host, addr string) bool {
	t.Helper()
	out, err := exec.CommandContext(ctx, "ip", "-n", h.NS, "-o", "-4", "addr", "show", "dev", "eth0").Output()
	if err != nil {
		t.Fatalf("addresses of %s: %v", h.Name, err)
	}
	return strings.Contains(string(out), " "+addr+"/")
}
