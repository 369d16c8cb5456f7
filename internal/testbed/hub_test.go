package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mure-dev/mure/internal/testcluster"
)

func TestHubAddresses(t *testing.T) {
	for _, tc := range []struct{ subnet, hub, cluster string }{
		{"10.77.0.0/24", "10.77.1.0/24", "10.77.1.10"},
		{"192.168.7.0/24", "192.168.8.0/24", "192.168.8.10"},
	} {
		tb := &Testbed{Config: Config{Subnet: tc.subnet, Hub: true}}
		if got := tb.HubSubnet(); got != tc.hub {
			t.Errorf("HubSubnet of %s = %q, want %q", tc.subnet, got, tc.hub)
		}
		if got := tb.ClusterAddr(); got != tc.cluster {
			t.Errorf("ClusterAddr of %s = %q, want %q", tc.subnet, got, tc.cluster)
		}
		if got := hostAddr(tb.HubSubnet(), false, 0); got != tc.cluster[:len(tc.cluster)-2]+"101" {
			t.Errorf("first client's hub address = %q", got)
		}
	}
	if tb := (&Testbed{Config: Config{Subnet: "10.77.0.0/24"}}); tb.HubSubnet() != "" || tb.ClusterAddr() != "" {
		t.Errorf("no hub: want empty HubSubnet and ClusterAddr, got %q, %q", tb.HubSubnet(), tb.ClusterAddr())
	}
}

// TestHub brings up 2 servers and a client with a hub, gives server 1 the
// cluster address and both servers one MAC on the hub, as the
// single-address agent would, and checks that the client reaches the
// cluster address and that server 2 sees the client's frames too.
func TestHub(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("testbed unavailable here: %v", err)
	}
	const prefix, mac = "mtbh-", "02:00:00:00:d5:c0"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := Config{
		Servers: 2, Clients: 1, ServerLink: "100mbit", ClientLink: "300mbit", ServerCPU: 0.2, ClientCPU: 0.2,
		Binary: testcluster.BuildBinary(t), NodeArgs: []string{"--timing", "fast"}, Hub: true,
		Prefix: prefix, Subnet: "10.77.197.0/24", Dir: t.TempDir() + "/tb", Disk: DiskTmpfs, DataMB: 64, // the network is tested here
	}
	tb, err := Up(ctx, cfg)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	defer tb.Down(context.Background())
	if tb.HubSubnet() != "10.77.198.0/24" || tb.ClusterAddr() != "10.77.198.10" {
		t.Fatalf("hub subnet %q, cluster address %q", tb.HubSubnet(), tb.ClusterAddr())
	}
	s1, s2, c1 := tb.Servers()[0], tb.Servers()[1], tb.Clients()[0]
	if c1.HubAddr != "10.77.198.101" || s1.HubAddr != "" {
		t.Fatalf("hub addresses: c1 %q, s1 %q", c1.HubAddr, s1.HubAddr)
	}
	for _, h := range []*Host{s1, s2} {
		for _, step := range [][]string{{"link", "set", HubDev, "down"}, {"link", "set", HubDev, "address", mac}, {"link", "set", HubDev, "up"}} {
			if _, err := run(ctx, "ip", append([]string{"-n", h.NS}, step...)...); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := run(ctx, "ip", "-n", s1.NS, "addr", "add", tb.ClusterAddr()+"/24", "dev", HubDev); err != nil {
		t.Fatal(err)
	}

	// The first attempt resolves the address (server 1 answers the ARP
	// request) and lets a learning bridge learn where the MAC is; a hub
	// floods the second, unicast, SYN to server 2 all the same.
	target := net.JoinHostPort(tb.ClusterAddr(), "9")
	if err := connectFrom(c1.NS, target); err != nil {
		t.Fatalf("client → cluster address: not answered: %v", err)
	}
	before := rxPackets(t, ctx, s2.NS)
	if err := connectFrom(c1.NS, target); err != nil {
		t.Fatalf("client → cluster address, again: not answered: %v", err)
	}
	if after := rxPackets(t, ctx, s2.NS); after < before+1 {
		t.Errorf("server 2 received %d frames on %s during a connection to server 1, want at least 1: the hub does not flood", after-before, HubDev)
	}

	downLeavesNothing(t, ctx, tb, prefix)
}

// connectFrom opens a TCP connection to addr from inside namespace ns; a
// refused connection counts as answered (a RST came back).
func connectFrom(ns, addr string) error {
	done := make(chan error, 1)
	go func() {
		// never unlocked: the thread, left in ns, ends with the goroutine
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			done <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- err
			return
		}
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			c.Close()
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			err = nil
		}
		done <- err
	}()
	return <-done
}

// rxPackets reads how many packets ns's hub interface has received.
func rxPackets(t *testing.T, ctx context.Context, ns string) uint64 {
	t.Helper()
	out, err := run(ctx, "ip", "-n", ns, "-s", "-j", "link", "show", "dev", HubDev)
	if err != nil {
		t.Fatal(err)
	}
	var links []struct {
		Stats struct {
			RX struct {
				Packets uint64 `json:"packets"`
			} `json:"rx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -s -j link show: %v (%q)", err, out)
	}
	return links[0].Stats.RX.Packets
}
