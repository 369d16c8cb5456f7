package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// TestMemoryLimitFollowsCgroup: a node started in a memory cgroup gives
// the collector 90% of the group's limit, unless GOMEMLIMIT says
// otherwise. The test's binary is run again inside a group of its own.
func TestMemoryLimitFollowsCgroup(t *testing.T) {
	if os.Getenv("MURE_TEST_MEMLIMIT") == "1" {
		setMemoryLimit(context.Background(), slog.New(slog.DiscardHandler))
		fmt.Printf("limit=%d\n", debug.SetMemoryLimit(-1))
		return
	}
	const root = "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(root, "memory.limit_in_bytes")); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and cgroup v1's memory hierarchy at " + root)
	}
	group := filepath.Join(root, fmt.Sprintf("mure-test-memlimit-%d", os.Getpid()))
	if err := os.Mkdir(group, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(group) })
	const groupLimit = 256 << 20
	if err := os.WriteFile(filepath.Join(group, "memory.limit_in_bytes"), []byte(strconv.Itoa(groupLimit)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  string
		want int64
	}{
		{"from the group", "", groupLimit * 9 / 10},
		{"GOMEMLIMIT wins", "GOMEMLIMIT=100MiB", 100 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$0" -test.run='^TestMemoryLimitFollowsCgroup$'`, os.Args[0], group)
			cmd.Env = append(os.Environ(), "MURE_TEST_MEMLIMIT=1")
			cmd.Env = append(cmd.Env, tc.env)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the test binary in %s: %v\n%s", group, err, out)
			}
			_, v, ok := strings.Cut(string(out), "limit=")
			v, _, _ = strings.Cut(v, "\n")
			got, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil {
				t.Fatalf("no limit in the output: %s", out)
			}
			// The ratio is applied to a float: allow a page either way.
			if d := got - tc.want; d < -4096 || d > 4096 {
				t.Errorf("collector's limit %d, want %d", got, tc.want)
			}
		})
	}
}
