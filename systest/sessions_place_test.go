//go:build linux

package systest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// placeBurst is how many logins arrive together in each round.
const placeBurst = 6

// TestSessionPlacement: three nodes, skewed, take bursts of concurrent
// logins through all three; each policy puts the sessions where it
// should and spreads its own figure more evenly than round robin, run as
// the baseline on the same skew. The nodes share this machine, so their
// memory and CPU figures are simulated (--debug-host-figures: a base per
// node, and what each session running there adds); session counts are
// real.
func TestSessionPlacement(t *testing.T) {
	needSessions(t)
	figs := filepath.Join(t.TempDir(), "hosts.json")
	run := "-- /bin/sleep 600"
	pc := testcluster.StartProc(t, 3, "--debug-host-figures", figs, "--session-max-per-user", "9",
		"--session-kind", "desk command place=fewest-sessions "+run,
		"--session-kind", "pick command place=p2c "+run,
		"--session-kind", "app command place=most-free-memory memory=256MiB "+run,
		"--session-kind", "calc command place=least-load "+run,
		"--session-kind", "rr command place=round-robin "+run,
		"--session-kind", "here command "+run)
	t.Cleanup(func() { killHolders(pc, 3) })
	ids := []string{pc.ID(0), pc.ID(1), pc.ID(2)}
	// n0 short of memory and busy; n1 the most memory; n2 the least CPU.
	const mib = 1 << 20
	hosts := map[string]node.SimHost{
		ids[0]: {FreeMemory: 1024 * mib, CPU: 0.9, RunQueue: 0.9, SessionMemory: 256 * mib, SessionCPU: 0.1, SessionPressure: 0.1},
		ids[1]: {FreeMemory: 3072 * mib, CPU: 0.5, RunQueue: 0.5, SessionMemory: 256 * mib, SessionCPU: 0.1, SessionPressure: 0.1},
		ids[2]: {FreeMemory: 2560 * mib, CPU: 0.2, RunQueue: 0.2, SessionMemory: 256 * mib, SessionCPU: 0.1, SessionPressure: 0.1},
	}
	b, _ := json.Marshal(hosts)
	if err := os.WriteFile(figs, b, 0o644); err != nil {
		t.Fatal(err)
	}
	admin := pc.Client(0)
	u := addSessionUser(t, admin)
	cls := make([]*client.Client, 3)
	for i := range cls {
		cls[i] = client.New([]string{pc.HTTPAddr(i)}, client.WithToken(u.token), client.WithAttempts(1))
	}
	ctx := context.Background()
	// burst starts n sessions of kind at once, through every node in turn,
	// and returns how many each node got.
	burst := func(t *testing.T, kind string) map[string]int {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, placeBurst)
		for i := range placeBurst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := cls[i%3].StartSession(ctx, client.NewSession{Kind: kind}); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("a login of kind %s: %v", kind, err)
		}
		return countByNode(t, cls[0], kind)
	}
	admins := []*client.Client{pc.Client(0), pc.Client(1), pc.Client(2)}
	// settled waits until every node sees every node's figures with the
	// sessions that run now: a burst decided on figures from before the
	// previous round's kills would measure the wrong thing.
	settled := func(t *testing.T) {
		t.Helper()
		testcluster.WaitFor(t, 10*time.Second, "the figures to show the sessions running now", func() bool {
			list, err := cls[0].Sessions(ctx, false)
			if err != nil {
				return false
			}
			running := map[string]int64{}
			for _, s := range list {
				running[s.Node]++
			}
			for _, c := range admins {
				raw, err := c.Status(ctx)
				var st struct {
					Members []struct {
						ID   string `json:"id"`
						Load *struct {
							Free int64 `json:"m"`
						} `json:"load"`
					} `json:"members"`
				}
				if err != nil || json.Unmarshal(raw, &st) != nil {
					return false
				}
				for _, m := range st.Members {
					if h := hosts[m.ID]; m.Load == nil || m.Load.Free != h.FreeMemory-running[m.ID]*h.SessionMemory {
						return false
					}
				}
			}
			return true
		})
	}
	killKind := func(t *testing.T, kinds ...string) {
		t.Helper()
		defer settled(t)
		list, err := cls[0].Sessions(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if slices.Contains(kinds, s.Kind) {
				if err := cls[0].KillSession(ctx, s.ID); err != nil {
					t.Fatalf("kill %s: %v", s.ID, err)
				}
			}
		}
	}
	rr := func(t *testing.T) map[string]int {
		got := burst(t, "rr")
		killKind(t, "rr")
		return got
	}

	t.Run("one node busy: fewest sessions and p2c", func(t *testing.T) {
		for range 3 { // n0 already runs three sessions
			if _, err := cls[0].StartSession(ctx, client.NewSession{Kind: "here", Node: ids[0]}); err != nil {
				t.Fatal(err)
			}
		}
		defer killKind(t, "here")
		base := map[string]int{ids[0]: 3}
		spread := func(got map[string]int) int {
			var c []int
			for _, id := range ids {
				c = append(c, base[id]+got[id])
			}
			return slices.Max(c) - slices.Min(c)
		}
		desk := burst(t, "desk")
		checkWhy(t, pc, u, "desk", "fewest-sessions")
		// Nine running: the user's limit refuses a tenth, saying why.
		_, err := cls[1].StartSession(ctx, client.NewSession{Kind: "desk"})
		if err == nil || !strings.Contains(err.Error(), "the most a user may run") || !strings.Contains(err.Error(), "mure session kill") {
			t.Errorf("a tenth session: %v, want the per-user limit's refusal", err)
		}
		killKind(t, "desk")
		// p2c draws its pairs at random: one burst may spread worse than
		// round robin (about one in twenty here); the mean of five does
		// so about once in ten thousand runs.
		var pick []map[string]int
		pickMean := 0.0
		for range 5 {
			pick = append(pick, burst(t, "pick"))
			killKind(t, "pick")
			pickMean += float64(spread(pick[len(pick)-1])) / 5
		}
		round := rr(t)
		t.Logf("sessions per node (n0 had 3): fewest-sessions %v spread %d, p2c %v mean spread %.1f, round robin %v spread %d",
			desk, spread(desk), pick, pickMean, round, spread(round))
		if desk[ids[0]] != 0 || spread(desk) > 1 {
			t.Errorf("fewest-sessions put %v: want none on the busy node and a spread of at most 1", desk)
		}
		if spread(desk) >= spread(round) {
			t.Errorf("fewest-sessions spread %d, round robin %d: want fewer", spread(desk), spread(round))
		}
		if pickMean >= float64(spread(round)) {
			t.Errorf("p2c mean spread %.1f, round robin %d: want less", pickMean, spread(round))
		}
	})

	// spreadOf is the spread over the nodes of a simulated figure with the
	// sessions got.
	spreadOf := func(got map[string]int, f func(h node.SimHost, n int) float64) float64 {
		var v []float64
		for _, id := range ids {
			v = append(v, f(hosts[id], got[id]))
		}
		return slices.Max(v) - slices.Min(v)
	}
	t.Run("one node short of memory: most free memory", func(t *testing.T) {
		free := func(h node.SimHost, n int) float64 { return float64(h.FreeMemory-int64(n)*h.SessionMemory) / mib }
		app := burst(t, "app")
		checkWhy(t, pc, u, "app", "most-free-memory")
		killKind(t, "app")
		round := rr(t)
		t.Logf("free memory spread (MiB): most-free-memory %v %.0f, round robin %v %.0f",
			app, spreadOf(app, free), round, spreadOf(round, free))
		if app[ids[0]] != 0 {
			t.Errorf("most-free-memory put %d sessions on the node short of memory", app[ids[0]])
		}
		if spreadOf(app, free) >= spreadOf(round, free) {
			t.Errorf("most-free-memory spread %.0f MiB, round robin %.0f: want less", spreadOf(app, free), spreadOf(round, free))
		}
	})

	t.Run("one node CPU-bound: least load", func(t *testing.T) {
		cpu := func(h node.SimHost, n int) float64 { return h.CPU + float64(n)*h.SessionCPU }
		calc := burst(t, "calc")
		checkWhy(t, pc, u, "calc", "least-load")
		killKind(t, "calc")
		round := rr(t)
		t.Logf("CPU spread: least-load %v %.2f, round robin %v %.2f", calc, spreadOf(calc, cpu), round, spreadOf(round, cpu))
		if calc[ids[0]] != 0 {
			t.Errorf("least-load put %d sessions on the CPU-bound node", calc[ids[0]])
		}
		if spreadOf(calc, cpu) >= spreadOf(round, cpu) {
			t.Errorf("least-load CPU spread %.2f, round robin %.2f: want less", spreadOf(calc, cpu), spreadOf(round, cpu))
		}
		// The decider's /status shows the placements it made, with the
		// figures each used.
		found := 0
		for _, c := range admins {
			raw, err := c.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var st struct {
				Services struct {
					Sessions struct {
						Placement struct {
							Policies map[string]string `json:"policies"`
							Recent   []struct {
								Kind   string                   `json:"kind"`
								Policy string                   `json:"policy"`
								Nodes  []client.PlacementFigure `json:"nodes"`
							} `json:"recent"`
						} `json:"placement"`
					} `json:"sessions"`
				} `json:"services"`
			}
			if err := json.Unmarshal(raw, &st); err != nil {
				t.Fatal(err)
			}
			p := st.Services.Sessions.Placement
			if p.Policies["calc"] != "least-load" {
				t.Errorf("/status policies %v: want calc least-load", p.Policies)
			}
			for _, r := range p.Recent {
				if r.Kind == "calc" && r.Policy == "least-load" && len(r.Nodes) == 3 && r.Nodes[0].CPU > 0 {
					found++
				}
			}
		}
		if found != placeBurst {
			t.Errorf("the nodes' /status show %d least-load placements with their figures, want %d", found, placeBurst)
		}
	})

	t.Run("an application session belongs to its desktop", func(t *testing.T) {
		desk, err := cls[0].StartSession(ctx, client.NewSession{Kind: "desk"})
		if err != nil {
			t.Fatal(err)
		}
		app, err := cls[1].StartSession(ctx, client.NewSession{Kind: "app", Parent: desk.ID})
		if err != nil {
			t.Fatal(err)
		}
		if app.Parent != desk.ID || app.Placement == nil || app.Placement.Policy != "most-free-memory" || app.Node == ids[0] {
			t.Fatalf("the application session: %+v (placement %+v): want parent %s, placed by most free memory, not on the node short of it",
				app, app.Placement, desk.ID)
		}
		if _, err := cls[2].StartSession(ctx, client.NewSession{Kind: "app", Parent: "0123456789abcdef"}); err == nil || !strings.Contains(err.Error(), "no such session") {
			t.Errorf("a parent that does not exist: %v", err)
		}
		if err := cls[2].KillSession(ctx, desk.ID); err != nil {
			t.Fatal(err)
		}
		testcluster.WaitFor(t, 10*time.Second, "the application session to end with its desktop", func() bool {
			return len(countByNode(t, cls[0], "app")) == 0
		})
	})
}

// countByNode counts the user's sessions of kind per node.
func countByNode(t *testing.T, c *client.Client, kind string) map[string]int {
	t.Helper()
	list, err := c.Sessions(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, s := range list {
		if s.Kind == kind {
			got[s.Node]++
		}
	}
	return got
}

// checkWhy runs mure session ls and checks that the sessions of kind say
// which policy placed them, and with what figures.
func checkWhy(t *testing.T, pc *testcluster.ProcCluster, u sessionUser, kind, policy string) {
	t.Helper()
	bin := testcluster.BuildBinary(t)
	out, err := mureCLI(t, bin, pc.HTTPAddr(2), u, "session", "ls")
	if err != nil {
		t.Fatalf("mure session ls: %v: %s", err, out)
	}
	n := 0
	deciders := map[string]bool{}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) > 2 && f[2] == kind {
			n++
			_, why, _ := strings.Cut(line, policy+" by ")
			decider, _, _ := strings.Cut(why, ":")
			deciders[decider] = true
			if why == "" || !strings.Contains(line, "*"+f[3]) {
				t.Errorf("mure session ls does not say why this %s session is on %s (policy %s):\n%s", kind, f[3], policy, line)
			}
		}
	}
	// Logins through all three nodes, one decider: the one that counted
	// them all in flight.
	if len(deciders) != 1 {
		t.Errorf("the %s sessions were placed by %v: want one decider", kind, deciders)
	}
	if n != placeBurst {
		t.Errorf("mure session ls lists %d sessions of kind %s, want %d:\n%s", n, kind, placeBurst, out)
	}
}
