package testbed

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/testcluster"
)

func TestOwnName(t *testing.T) {
	for _, tc := range []struct {
		name, suffix  string
		bridges, want bool
	}{
		{name: "mure-s1", want: true},
		{name: "mure-c12", want: true},
		{name: "mure-s1h", suffix: "h", want: true},
		{name: "mure-s1.img", suffix: ".img", want: true},
		{name: "mure-br", bridges: true, want: true},
		{name: "mure-hub", bridges: true, want: true},
		{name: "mure-br"},                         // a bridge only where bridges are looked for
		{name: "mure-sessions"},                   // the sessions' cgroup parent
		{name: "mure-s"},                          // no number
		{name: "mure-x1"},                         // no such host kind
		{name: "mure-s1x"},                        // trailing letters
		{name: "mtbt-s1"},                         // another prefix
		{name: "mure-s1.img.bak", suffix: ".img"}, // not an image
	} {
		if got := ownName("mure-", tc.name, tc.suffix, tc.bridges); got != tc.want {
			t.Errorf("ownName(%q, suffix %q, bridges %v) = %v, want %v", tc.name, tc.suffix, tc.bridges, got, tc.want)
		}
	}
}

// TestSweepCrashedRun loses a testbed's state file, as a run killed before
// its Down would, and leaves a cgroup of its prefix outside this process's
// own groups, as a run started by another job would. Up with the same
// prefix must still succeed: it sweeps the crashed run's running node,
// disk (mount, loop device, throttle rules, image), links, namespace and
// cgroups first. Then Teardown, without a state file either, must find
// and remove the second run by its prefix.
func TestSweepCrashedRun(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("testbed unavailable here: %v", err)
	}
	const prefix = "mtbx-"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := Config{
		Servers: 1, ServerCPU: 0.2, Binary: testcluster.BuildBinary(t), NodeArgs: []string{"--timing", "fast"},
		Prefix: prefix, Subnet: "10.77.196.0/24", Dir: t.TempDir() + "/tb",
		Disk: DiskLoop, DiskDir: diskDir(t), DiskMB: 64, DiskLimits: DiskLimits{WriteBPS: 10e6},
	}
	crashed, err := Up(ctx, cfg)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	defer crashed.Down(context.Background())
	if err := os.Remove(statePath(cfg.Dir)); err != nil {
		t.Fatal(err)
	}
	var stray string
	if !isV2() {
		stray = filepath.Join(cgroupRoot, "memory", prefix+"c9")
		if err := os.Mkdir(stray, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(stray)
	}
	left, err := Leftovers(ctx, prefix)
	if err != nil || len(left.Loops) != 1 || len(left.Mounts) != 1 || len(left.Netns) != 1 || len(left.Cgroups) == 0 {
		t.Fatalf("before the sweep: %v (%v); want the host's loop device, mount, namespace and cgroups", left, err)
	}
	old := crashed.Servers()[0]

	cfg.Dir, cfg.DiskDir = t.TempDir()+"/tb", diskDir(t) // a new image: the old one must go
	second, err := Up(ctx, cfg)
	if err != nil {
		t.Fatalf("up over a crashed run's leftovers: %v", err)
	}
	defer second.Down(context.Background())
	if Running(old.PID) {
		t.Errorf("the crashed run's node %d still runs", old.PID)
	}
	if _, err := os.Stat(old.Disk.Image); !os.IsNotExist(err) {
		t.Errorf("the crashed run's disk image %s still exists (%v)", old.Disk.Image, err)
	}
	if _, err := os.Stat(stray); stray != "" && !os.IsNotExist(err) {
		t.Errorf("the stray cgroup %s is still there (%v)", stray, err)
	}
	if code, body := put(ctx, second.Servers()[0], "/files/sweep/a", []byte("after the sweep")); code/100 != 2 {
		t.Errorf("put on the new testbed: %d %s", code, body)
	}

	if err := os.Remove(statePath(cfg.Dir)); err != nil {
		t.Fatal(err)
	}
	if err := Teardown(ctx, cfg.Dir, prefix); err != nil {
		t.Fatalf("teardown: %v", err)
	}
	if left, err := Leftovers(ctx, prefix); err != nil || !left.Empty() {
		t.Errorf("after the sweep: %v (%v)", left, err)
	}
	s1 := second.Servers()[0]
	if Running(s1.PID) {
		t.Errorf("node process %d still runs", s1.PID)
	}
	if _, err := os.Stat(s1.Disk.Image); !os.IsNotExist(err) {
		t.Errorf("disk image %s still exists (%v)", s1.Disk.Image, err)
	}
	for _, d := range []*Disk{old.Disk, s1.Disk} {
		rules, _ := os.ReadFile(blkioRoot + "/blkio.throttle.write_bps_device")
		if strings.Contains(string(rules), d.MajMin+" ") {
			t.Errorf("blkio rule on %s left behind: %q", d.MajMin, rules)
		}
	}
}
