package systest

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/testcluster"
)

// topRow returns the fields of node id's row on a `mure top` screen.
func topRow(screen, id string) []string {
	for line := range strings.Lines(screen) {
		if f := strings.Fields(line); len(f) > 3 && f[0] == id && !strings.ContainsAny(f[1], "▁▂▃▄▅▆▇█") {
			return f
		}
	}
	return nil
}

// TestTopInTmux runs `mure top` in a real terminal (tmux) against three
// nodes: the screen shows every node up with its figures and a minute of
// sparklines; a killed node turns down while the others go on.
func TestTopInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (scripts/test.sh installs it)")
	}
	c := testcluster.Start(t, 3)
	bin := testcluster.BuildBinary(t)
	tm := newTmux(t)
	nodes := c.HTTPAddr(0) + "," + c.HTTPAddr(1)
	tm.run("new-session", "-d", "-s", "top", "-x", "200", "-y", "30",
		"env MURE_NODE="+nodes+" MURE_TOKEN="+c.Token()+" "+bin+" top; sleep 60")

	var screen string
	testcluster.WaitFor(t, 20*time.Second, "mure top to show every node up with figures", func() bool {
		screen = tm.screen("top")
		for i := range c.Nodes {
			f := topRow(screen, c.ID(i))
			if len(f) < 17 || f[1] != "up" || !strings.HasSuffix(f[3], "%") {
				return false
			}
		}
		// the leader is named (an election under load may leave none a moment)
		leader := strings.Contains(screen, "raft leader "+c.ID(0)) || strings.Contains(screen, "raft leader "+c.ID(1)) ||
			strings.Contains(screen, "raft leader "+c.ID(2))
		return leader && strings.Contains(screen, "requests/s, last")
	})

	dead := c.ID(2)
	c.Kill(2)
	testcluster.WaitFor(t, 20*time.Second, "mure top to show the killed node down", func() bool {
		screen = tm.screen("top")
		f := topRow(screen, dead)
		return len(f) > 1 && strings.HasPrefix(f[1], "down")
	})
	if f := topRow(screen, c.ID(0)); len(f) < 2 || f[1] != "up" {
		t.Errorf("after the kill node 0's row is %v:\n%s", f, screen)
	}
	t.Logf("mure top after the kill:\n%s", screen)
}
