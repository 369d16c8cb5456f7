package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/history"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

func TestRenderTop(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	set := history.NewSet(0)
	add := func(id string, from, to int64, cpu, rps float32) {
		for ts := from; ts <= to; ts++ {
			p := history.Unknown(ts)
			p.V[history.CPU], p.V[history.RequestRate], p.V[history.Files] = cpu, rps*float32(ts-from), 7
			set.Series(id).Add(p)
		}
	}
	add("aaaa", now.Unix()-59, now.Unix(), 0.5, 2)
	add("bbbb", now.Unix()-59, now.Unix()-30, 0.25, 1) // died 30 s ago
	st := node.Status{ClusterID: "c1", Node: node.NodeInfo{ID: "aaaa"}, Leader: "aaaa",
		Dispatch: node.DispatchInfo{Holder: "aaaa", How: "raft-leader"},
		Members: []cluster.Member{
			{ID: "aaaa", Gossip: cluster.GossipAlive, State: "active", Suffrage: "voter", Leader: true},
			{ID: "bbbb", Gossip: cluster.GossipDead, State: "failed", Suffrage: "voter"},
			{ID: "cccc", Gossip: cluster.GossipSuspect, Suffrage: "nonvoter"},
		}}
	var b strings.Builder
	if err := renderTop(&b, st, set, now, 120, "status: connection refused"); err != nil {
		t.Fatal(err)
	}
	screen := b.String()
	row := func(id string) []string {
		for line := range strings.Lines(screen) {
			if f := strings.Fields(line); len(f) > 3 && f[0] == id && f[1] != "" && !strings.ContainsAny(f[1], "▁█") {
				return f
			}
		}
		t.Fatalf("no row for %s in\n%s", id, screen)
		return nil
	}
	for _, tc := range []struct {
		id                string
		state, roles, cpu string
		files             string
	}{
		{"aaaa", "up", "leader,voter,dispatcher", "50%", "7"},
		{"bbbb", "down,failed", "voter", "-", "-"}, // its last figures are 30 s old: not shown as now
		{"cccc", "suspect", "nonvoter", "-", "-"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			f := row(tc.id)
			if f[1] != tc.state || f[2] != tc.roles || f[3] != tc.cpu || f[16] != tc.files {
				t.Errorf("row %v: want state %s roles %s cpu %s files %s", f, tc.state, tc.roles, tc.cpu, tc.files)
			}
		})
	}
	for _, want := range []string{"cluster c1", "seen from aaaa", "raft leader aaaa", "dispatcher role aaaa (raft-leader)", "! status: connection refused",
		"CPU of quota, last 60 s", "requests/s, last 60 s"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	// Sparklines: a full minute for aaaa (rising requests end in the top
	// block), half a minute then blanks for bbbb, nothing for cccc.
	for _, tc := range []struct{ prefix, want string }{
		{"  aaaa       ▅▅▅▅", "max 50%"},
		{"  bbbb       ▃▃▃", "max 25%"},
		{"  cccc       " + strings.Repeat(" ", 60), "max 0%"},
	} {
		var found bool
		for line := range strings.Lines(screen) {
			if strings.HasPrefix(line, tc.prefix) && strings.Contains(line, tc.want) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no sparkline %q ... %q in\n%s", tc.prefix, tc.want, screen)
		}
	}
	if !strings.Contains(screen, "█  max 118") {
		t.Errorf("aaaa's requests sparkline should end at its top, 118/s:\n%s", screen)
	}
}

// TestTopOnce: `mure top --once` prints one screen from a real node, and a
// clear error when it cannot reach one.
func TestTopOnce(t *testing.T) {
	c := testcluster.Start(t, 1)
	t.Setenv("MURE_TOKEN", c.Token())
	t.Setenv("MURE_NODE", c.HTTPAddr(0))
	var out string
	testcluster.WaitFor(t, 10*time.Second, "a screen with the node's CPU", func() bool {
		var err error
		out, err = run(t, runTop, "--once")
		f := topRowOf(out, c.ID(0))
		return err == nil && len(f) > 3 && f[1] == "up" && strings.HasSuffix(f[3], "%")
	})
	if strings.Contains(out, "\x1b[") {
		t.Errorf("--once wrote terminal control sequences: %q", out)
	}
	if _, err := run(t, runTop, "--once", "--node", "127.0.0.1:1"); err == nil {
		t.Error("--once against no node succeeded")
	}
}

func topRowOf(screen, id string) []string {
	for line := range strings.Lines(screen) {
		if f := strings.Fields(line); len(f) > 3 && f[0] == id {
			return f
		}
	}
	return nil
}
