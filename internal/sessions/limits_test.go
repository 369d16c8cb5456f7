package sessions

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mure-dev/mure/internal/hostload"
)

// nodeGroup makes, for a test, a cgroup in each v1 hierarchy a session
// uses, under this process's own, that plays a node's group: a CPU quota
// of half a core and a memory limit, as a testbed host has. It returns the
// groups' paths (as /proc/self/cgroup names them) and their directories;
// the test's cleanup removes them (deepest first).
func nodeGroup(t *testing.T) (own map[string]string, dirs map[string]string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making cgroups needs root")
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		t.Skip("cgroup v2: this test drives v1's hierarchies (the machines mure is tested on run v1)")
	}
	real, err := hostload.OwnCgroups()
	if err != nil {
		t.Skipf("read /proc/self/cgroup: %v", err)
	}
	name := fmt.Sprintf("mure-test-node-%d", os.Getpid())
	own, dirs = map[string]string{}, map[string]string{}
	for _, ctl := range v1Controllers {
		mount, err := filepath.EvalSymlinks(filepath.Join("/sys/fs/cgroup", ctl))
		if err != nil {
			t.Skipf("no cgroup v1 %s hierarchy: %v", ctl, err)
		}
		own[ctl] = filepath.Join(real[ctl], name)
		dirs[ctl] = filepath.Join(mount, own[ctl])
		if err := os.Mkdir(dirs[ctl], 0o755); err != nil {
			t.Skipf("cannot make a cgroup: %v", err)
		}
		t.Cleanup(func() { removeTree(t, dirs[ctl]) })
	}
	for file, v := range map[string]string{"cpu/cpu.cfs_period_us": "100000", "cpu/cpu.cfs_quota_us": "50000", "memory/memory.limit_in_bytes": strconv.Itoa(256 << 20)} {
		ctl, f, _ := strings.Cut(file, "/")
		if err := os.WriteFile(filepath.Join(dirs[ctl], f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return own, dirs
}

// removeTree removes a cgroup and the groups in it, deepest first.
func removeTree(t *testing.T, dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			removeTree(t, filepath.Join(dir, e.Name()))
		}
	}
	if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
		t.Errorf("remove the test's cgroup %s: %v", dir, err)
	}
}

// TestCgroupsUnderNodeGroup: on real cgroups, sessions' groups are made
// under the node's own group in each hierarchy, not at the root, so that
// the node's limits (here half a core and 256 MiB) bound its sessions too;
// a session asking for more CPU than the node has gets the node's quota
// (v1 refuses a child more than its parent); removing the last session
// leaves the node's group as it was. A node whose group refuses a group
// falls back to the root and says so.
func TestCgroupsUnderNodeGroup(t *testing.T) {
	own, node := nodeGroup(t)
	c := detectCgroups("/sys/fs/cgroup", own)
	if c == nil || c.Escaped != "" {
		t.Fatalf("cgroups %+v, want sessions under the node's group", c)
	}
	for i, ctl := range v1Controllers {
		if want := filepath.Join(node[ctl], cgroupParent); c.Parents[i] != want {
			t.Errorf("the sessions' %s groups go in %s, want %s", ctl, c.Parents[i], want)
		}
	}
	dirs, err := c.create("0123456789abcdef", Limits{CPUs: 2, MemoryBytes: 64 << 20, Processes: 8})
	if err != nil {
		t.Fatalf("a session asking for 2 cores in a node of half a core: %v", err)
	}
	for file, want := range map[string]string{
		filepath.Join(dirs[0], "memory.limit_in_bytes"): strconv.Itoa(64 << 20),
		filepath.Join(dirs[1], "cpu.cfs_quota_us"):      "50000",
		filepath.Join(dirs[2], "pids.max"):              "8",
	} {
		if b, err := os.ReadFile(file); err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s: %q %v, want %s", file, b, err, want)
		}
	}
	c.remove("0123456789abcdef")
	for _, ctl := range v1Controllers {
		if entries, _ := os.ReadDir(node[ctl]); hasDir(entries) {
			t.Errorf("the node's %s group keeps groups after its last session: %v", ctl, entries)
		}
	}

	t.Run("a group that refuses", func(t *testing.T) {
		gone := map[string]string{}
		for ctl, p := range own {
			gone[ctl] = filepath.Join(p, "gone")
		}
		c := detectCgroups("/sys/fs/cgroup", gone)
		if c == nil || !strings.Contains(c.Escaped, "gone") || !strings.Contains(c.Escaped, "outside the node's limits") {
			t.Fatalf("cgroups %+v, want the root, saying why", c)
		}
		for i, ctl := range v1Controllers {
			mount, _ := filepath.EvalSymlinks(filepath.Join("/sys/fs/cgroup", ctl))
			if want := filepath.Join(mount, cgroupParent); c.Parents[i] != want {
				t.Errorf("the sessions' %s groups go in %s, want %s", ctl, c.Parents[i], want)
			}
		}
	})
}

func hasDir(entries []os.DirEntry) bool {
	for _, e := range entries {
		if e.IsDir() {
			return true
		}
	}
	return false
}

// TestDetectCgroupsReadsOwnGroup: a node started inside a group (as a
// testbed host's node is) finds it from /proc/self/cgroup: this test's
// binary, run inside the test's node group, reports its Parents.
func TestDetectCgroupsReadsOwnGroup(t *testing.T) {
	if os.Getenv("MURE_TEST_DETECT_CGROUPS") == "1" {
		b, _ := json.Marshal(DetectCgroups())
		fmt.Printf("cgroups=%s\n", b)
		return
	}
	_, node := nodeGroup(t)
	var join strings.Builder
	for _, ctl := range v1Controllers {
		fmt.Fprintf(&join, "echo $$ > %s/cgroup.procs && ", node[ctl])
	}
	cmd := exec.Command("sh", "-c", join.String()+`exec "$0" -test.run='^TestDetectCgroupsReadsOwnGroup$'`, os.Args[0])
	cmd.Env = append(os.Environ(), "MURE_TEST_DETECT_CGROUPS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the test binary in the node's group: %v\n%s", err, out)
	}
	_, js, _ := strings.Cut(string(out), "cgroups=")
	js, _, _ = strings.Cut(js, "\n")
	var got Cgroups
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for i, ctl := range v1Controllers {
		if want := filepath.Join(node[ctl], cgroupParent); i >= len(got.Parents) || got.Parents[i] != want {
			t.Errorf("a node in %s puts sessions' groups in %v, want %s", node[ctl], got.Parents, want)
		}
	}
}
