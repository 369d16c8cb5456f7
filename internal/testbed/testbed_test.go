package testbed

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/bench"
	"github.com/mure-dev/mure/internal/hostload"
	"github.com/mure-dev/mure/internal/testcluster"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "100mbit", want: 100e6},
		{in: "1gbit", want: 1e9},
		{in: "2.5Mbit", want: 2.5e6},
		{in: "500kbit", want: 500e3},
		{in: "100", bad: true},
		{in: "mbit", bad: true},
		{in: "-5mbit", bad: true},
		{in: "10kbit", bad: true}, // below the range
		{in: "1tbit", bad: true},
	} {
		got, err := ParseRate(tc.in)
		if tc.bad != (err != nil) || got != tc.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestConfigRules(t *testing.T) {
	base := Config{Servers: 2, Clients: 2, ServerLink: "100mbit", ClientLink: "150mbit", ServerCPU: 0.2, ClientCPU: 0.2, Binary: "mure"}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		errHas string // "" when valid
	}{
		{"valid", func(*Config) {}, ""},
		{"too much CPU", func(c *Config) { c.ServerCPU, c.ClientCPU = 0.5, 0.4 }, "CPU quotas add up"},
		{"clients slower than servers", func(c *Config) { c.ClientLink = "100mbit" }, "clients' links"},
		{"unbalanced allowed", func(c *Config) { c.ClientLink, c.Unbalanced = "10mbit", true }, ""},
		{"public subnet", func(c *Config) { c.Subnet = "8.8.8.0/24" }, "private IPv4 /24"},
		{"long prefix", func(c *Config) { c.Prefix = "toolongprefix" }, "at most 7"},
		{"no servers", func(c *Config) { c.Servers = 0 }, "servers"},
		{"bad rate", func(c *Config) { c.ServerLink = "fast" }, "server link"},
		{"hub", func(c *Config) { c.Hub = true }, ""},
		{"tmpfs", func(c *Config) { c.Disk = DiskTmpfs }, ""},
		{"unknown disk", func(c *Config) { c.Disk = "ssd" }, `disk "ssd"`},
		{"tiny disk", func(c *Config) { c.DiskMB = 10 }, "at least 64"},
		{"negative disk rate", func(c *Config) { c.DiskLimits.WriteBPS = -1 }, "disk limits"},
		{"hub after the last /24", func(c *Config) { c.Hub, c.Subnet = true, "10.77.255.0/24" }, "no next /24"},
		{"hub after the last private /24", func(c *Config) { c.Hub, c.Subnet = true, "172.31.255.0/24" }, "no next /24"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.change(&c)
			err := c.Validate()
			if tc.errHas == "" && err != nil {
				t.Fatalf("want valid, got %v", err)
			}
			if tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)) {
				t.Fatalf("want an error containing %q, got %v", tc.errHas, err)
			}
		})
	}
}

// TestTestbed brings a 2-server, 2-client testbed up, runs a short read
// load from both client hosts through it, checks the figures are sane
// (no error, within the links' capacity) and that teardown leaves nothing.
func TestTestbed(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("testbed unavailable here: %v", err)
	}
	const prefix = "mtbt-"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := Config{
		Servers: 2, Clients: 2, ServerLink: "100mbit", ClientLink: "200mbit", ServerCPU: 0.25, ClientCPU: 0.25,
		Binary: testcluster.BuildBinary(t), NodeArgs: []string{"--timing", "fast"},
		Prefix: prefix, Subnet: "10.77.199.0/24", Dir: t.TempDir() + "/tb",
		Disk: DiskLoop, DiskDir: diskDir(t), DiskMB: 256, MemoryMB: 256,
		DiskLimits: DiskLimits{ReadBPS: 40e6, WriteBPS: 40e6, ReadIOPS: 800, WriteIOPS: 400},
	}
	tb, err := Up(ctx, cfg)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	defer tb.Down(context.Background())
	for _, h := range tb.Servers() {
		// the kernel detaches the device once its file system is unmounted
		if ac, _ := os.ReadFile("/sys/block/" + filepath.Base(h.Disk.Dev) + "/loop/autoclear"); strings.TrimSpace(string(ac)) != "1" {
			t.Errorf("%s's loop device %s has no autoclear flag (%q)", h.Name, h.Disk.Dev, ac)
		}
	}
	var workers []bench.Worker
	for _, h := range tb.Clients() {
		workers = append(workers, tb.BenchWorker(h, cfg.Binary))
	}
	p := bench.Params{Nodes: tb.ServerHTTP(), Clients: 4, Files: 4, Sizes: []int64{64 << 10},
		Ops: []string{"read"}, Sets: []string{"own"},
		Load: bench.Load{Duration: 2 * time.Second, Warmup: 300 * time.Millisecond, Timeout: 10 * time.Second}}
	rep, err := bench.RunDistributed(ctx, p, workers)
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	if len(rep.Groups) != 1 || len(rep.Groups[0].Runs) != 1 {
		t.Fatalf("want one group with one run, got %+v", rep.Groups)
	}
	g := rep.Groups[0]
	// two 100 Mbit/s server links carry at most 25 MB/s (plus the bucket's burst)
	if g.Errors != 0 || g.Requests == 0 || g.MBPerSec.Mean <= 0 || g.MBPerSec.Mean > 27 || g.Runs[0].Clients != 4 {
		t.Fatalf("insane result: %d requests, %d errors %v, %.1f MB/s over 2×100 Mbit/s, %d clients",
			g.Requests, g.Errors, g.ErrorKinds, g.MBPerSec.Mean, g.Runs[0].Clients)
	}
	t.Logf("2 servers, 2 client hosts: %.1f MB/s, p99 %.1f ms", g.MBPerSec.Mean, g.Latency.P99)
	for _, h := range tb.Servers() {
		if u, err := tb.Usage(h); err != nil || u.CPUSeconds <= 0 {
			t.Errorf("server %s: cgroup measured no CPU (%+v, %v)", h.Name, u, err)
		}
		// the node reports its own host's figures, not the machine's
		host, err := nodeHost(ctx, h)
		if err != nil || !strings.HasPrefix(host.Source, "cgroup") || host.CPUQuota != cfg.ServerCPU || host.CPUSeconds <= 0 || host.MemoryBytes <= 0 {
			t.Errorf("server %s: node reports host %+v (%v), want its cgroup with a %.2f-core quota", h.Name, host, err, cfg.ServerCPU)
		}
	}

	// per-host figures under skewed load; per-host disks: s2's slowed
	// live, each measured inside its host
	checkSkewedCPU(t, ctx, tb)
	slow := cfg.DiskLimits
	slow.ReadBPS, slow.WriteBPS = 20e6, 20e6
	if err := tb.SlowDisk(tb.Servers()[1], slow); err != nil {
		t.Fatal(err)
	}
	checkDiskRates(t, ctx, tb)
	checkPageCacheFree(t, ctx, tb)
	checkFullDisk(t, ctx, tb)

	// faults: a stopped node is frozen, a killed one is gone and restarts
	s2 := tb.Servers()[1]
	if err := tb.Signal(s2, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "s2's node to exit", func() bool { return !Running(s2.PID) })
	if err := tb.Start(ctx, s2); err != nil {
		t.Fatalf("restart s2: %v", err)
	}
	if err := tb.Cut(ctx, s2); err != nil {
		t.Fatal(err)
	}
	if err := tb.Heal(ctx, s2); err != nil {
		t.Fatal(err)
	}

	pids := []int{}
	for _, h := range tb.Servers() {
		pids = append(pids, h.PID)
	}
	downLeavesNothing(t, ctx, tb, prefix)
	for _, pid := range pids {
		if Running(pid) {
			t.Errorf("node process %d still runs", pid)
		}
	}
	mounts, _ := os.ReadFile("/proc/mounts")
	if strings.Contains(string(mounts), cfg.Dir) {
		t.Errorf("tmpfs still mounted under %s", cfg.Dir)
	}
	if _, err := os.Stat(cfg.Dir); !os.IsNotExist(err) {
		t.Errorf("testbed directory %s still exists (%v)", cfg.Dir, err)
	}
	if _, err := os.Stat(cfg.DiskDir); !os.IsNotExist(err) {
		t.Errorf("disk image directory %s still exists (%v)", cfg.DiskDir, err)
	}
	for _, f := range []string{"read_bps", "write_bps", "read_iops", "write_iops"} {
		rules, _ := os.ReadFile(blkioRoot + "/blkio.throttle." + f + "_device")
		for _, h := range tb.Servers() {
			if strings.Contains(string(rules), h.Disk.MajMin+" ") {
				t.Errorf("blkio %s rule on %s (%s) left behind: %q", f, h.Disk.Dev, h.Disk.MajMin, rules)
			}
		}
	}
}

// diskDir returns a directory for the disk images that Up is to make, on
// the machine's real disk (/var/tmp), removed after the test.
func diskDir(t *testing.T) string {
	parent, err := os.MkdirTemp("/var/tmp", "mure-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	return filepath.Join(parent, "disks")
}

// downLeavesNothing tears the testbed down and checks that nothing with
// its prefix is left (namespaces, links, bridges, cgroups).
func downLeavesNothing(t *testing.T, ctx context.Context, tb *Testbed, prefix string) {
	t.Helper()
	if err := tb.Down(ctx); err != nil {
		t.Fatalf("down: %v", err)
	}
	left, err := Leftovers(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !left.Empty() {
		t.Errorf("left behind: %v", left)
	}
}

// nodeHost asks the node of h what its host uses (GET /status).
func nodeHost(ctx context.Context, h *Host) (hostload.Sample, error) {
	var st struct {
		Host hostload.Sample `json:"host"`
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+h.HTTP()+"/status", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st.Host, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st.Host, err
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
