package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/hostload"
)

// TestRemoveCgroupWithChildren: a host's cgroup that holds groups of its
// own (its node's sessions', with a process in one) is removed whole, the
// process killed: the testbed's teardown leaves nothing behind.
func TestRemoveCgroupWithChildren(t *testing.T) {
	if os.Geteuid() != 0 || isV2() {
		t.Skip("needs root and cgroup v1")
	}
	own, err := hostload.OwnCgroups()
	if err != nil {
		t.Skip(err)
	}
	mount, err := filepath.EvalSymlinks(filepath.Join(cgroupRoot, "memory"))
	if err != nil {
		t.Skip(err)
	}
	host := filepath.Join(mount, own["memory"], fmt.Sprintf("mure-test-host-%d", os.Getpid()))
	session := filepath.Join(host, "mure-sessions", "0123456789abcdef")
	if err := os.MkdirAll(session, 0o755); err != nil {
		t.Skipf("cannot make a cgroup: %v", err)
	}
	t.Cleanup(func() { os.Remove(session); os.Remove(filepath.Dir(session)); os.Remove(host) })
	cmd := exec.Command("sh", "-c", "echo $$ > "+session+"/cgroup.procs && exec sleep 60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	for deadline := time.Now().Add(10 * time.Second); len((&Cgroup{Dirs: []string{session}}).procs()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the process did not enter the session's cgroup")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := removeCgroupDir(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(host); !os.IsNotExist(err) {
		t.Fatalf("the host's cgroup is still there: %v", err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the process in the session's cgroup was not killed")
	}
}
