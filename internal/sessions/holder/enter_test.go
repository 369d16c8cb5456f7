//go:build linux

package holder

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as the holder's cgroup shim, as
// the mure binary does (`mure session-exec`).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == EnterCommand {
		err := Enter(os.Args[2:])
		fmt.Fprintln(os.Stderr, err)
		os.Exit(127)
	}
	os.Exit(m.Run())
}

// testCgroup makes a pids cgroup limited to max processes, or skips.
func testCgroup(t *testing.T, max int) []string {
	t.Helper()
	name := "mure-holder-test-" + fmt.Sprint(os.Getpid())
	dir := filepath.Join("/sys/fs/cgroup/pids", name) // v1
	if isV2("/sys/fs/cgroup") {
		dir = filepath.Join("/sys/fs/cgroup", name)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot create a cgroup here: %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(dir) })
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(fmt.Sprint(max)), 0o644); err != nil {
		t.Skipf("cannot limit processes here: %v", err)
	}
	return []string{dir}
}

// TestProgramStartsInItsCgroups: what the program forks in its first
// instant is inside its groups and counted, not let out (the flake of
// TestSessions/limits: 8 of 30 started under processes=8).
func TestProgramStartsInItsCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the holder switches accounts: run as root")
	}
	cgs := testCgroup(t, 8)
	name := filepath.Base(cgs[0])
	py := `import os, time
n = 0
for i in range(30):
    try:
        if os.fork() == 0:
            time.sleep(3); os._exit(0)
        n += 1
    except OSError:
        pass
print("started", n, flush=True)
time.sleep(30)`
	dir := startSpec(t, Spec{ID: "t1", Argv: []string{"/bin/sh", "-c", `cat /proc/self/cgroup; exec python3 -c "$0"`, py},
		Env: []string{"PATH=/usr/bin:/bin", "TERM=xterm"}, Dir: "/", UID: nobody, GID: nobody, Size: Size{Cols: 80, Rows: 40},
		Scrollback: 100, Cgroups: cgs})
	c, err := Attach(context.Background(), dir, Size{Cols: 80, Rows: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := readUntil(t, c, "started ")
	if !strings.Contains(seen, name) {
		t.Errorf("the program's first child was not in the session's cgroup %s:\n%s", name, seen)
	}
	var n int
	rest := seen[strings.Index(seen, "started "):]
	if _, err := fmt.Sscanf(rest, "started %d", &n); err != nil || n < 1 || n > 7 {
		t.Errorf("the program started %d of 30 processes (%v), want 1-7 under pids.max=8:\n%s", n, err, seen)
	}
}
