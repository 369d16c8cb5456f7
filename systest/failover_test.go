//go:build linux

package systest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestFailoverTrials measures how long writes stop after kill -9 of the
// raft leader when that leader also holds the written file's write right
// (issue 17; docs/decisions/0017-failover-timings.md). Three process
// nodes on loopback with the default timings; each trial writes the file
// through the leader, kills it, and writes through the survivors every
// 20 ms until one write is acknowledged; the killed node is restarted
// before the next trial. It prints the distribution. It is a benchmark,
// not a test: it runs only with MURE_FAILOVER_TRIALS=N
// (scripts/bench/failover.sh runs 20), and fails only if a write is not
// accepted within 30 s.
func TestFailoverTrials(t *testing.T) {
	trials, _ := strconv.Atoi(os.Getenv("MURE_FAILOVER_TRIALS"))
	if trials <= 0 {
		t.Skip("a benchmark: set MURE_FAILOVER_TRIALS=N (scripts/bench/failover.sh)")
	}
	c := testcluster.StartProc(t, 3, "--timing", "default")
	ctx := procCtx(t, time.Duration(trials)*time.Minute)
	// The right stays with its writer: the trial is about taking it over.
	if _, err := c.Client(0).SetConfig(ctx, "resume.idle", "1h"); err != nil {
		t.Fatal(err)
	}
	var took []time.Duration
	for trial := range trials {
		// A new file per trial: its first writer, the leader, takes its right.
		l, f := c.Leader(), fmt.Sprint("f", trial)
		if _, err := putRetry(ctx, c.Client(l), f, "before"); err != nil {
			t.Fatal(err)
		}
		if holder, _ := fileHolders(ctx, t, c, l, f); holder != c.ID(l) {
			t.Fatalf("trial %d: the leader %s wrote %s but %q holds its right", trial, c.ID(l), f, holder)
		}
		var survivors []string
		for i := range 3 {
			if i != l {
				survivors = append(survivors, c.HTTPAddr(i))
			}
		}
		start := time.Now()
		c.Kill(l)
		phases := func(string, ...any) {}
		if os.Getenv("MURE_FAILOVER_PHASES") != "" {
			phases = t.Logf
		}
		d, attempts, err := firstWrite(ctx, start, survivors, f, phases)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		took = append(took, d)
		t.Logf("trial %2d: killed leader %s; first write accepted after %v (%d attempts)", trial, c.ID(l), d.Round(time.Millisecond), attempts)
		c.Restart(l)
		c.WaitReady(l)
	}
	slices.Sort(took)
	var b strings.Builder
	for _, d := range took {
		fmt.Fprintf(&b, " %.2f", d.Seconds())
	}
	t.Logf("writes accepted again after kill -9 of the leader, %d trials, seconds, sorted:%s", len(took), b.String())
	t.Logf("min %.2f s, median %.2f s, p90 %.2f s, max %.2f s", took[0].Seconds(), median(took).Seconds(),
		took[len(took)*9/10].Seconds(), took[len(took)-1].Seconds())
}

// firstWrite writes path through the nodes at addrs in turn, one attempt
// each (a redirect to the dead node fails that attempt), every 20 ms,
// until one is acknowledged; it returns the time from start to then.
// phases is told of each new kind of failure (MURE_FAILOVER_PHASES=1).
func firstWrite(ctx context.Context, start time.Time, addrs []string, path string, phases func(string, ...any)) (time.Duration, int, error) {
	last := ""
	cls := make([]*client.Client, len(addrs))
	for i, a := range addrs {
		cls[i] = client.New([]string{a}, client.WithToken(testcluster.TokenFor(a)), client.WithAttempts(1))
	}
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := cls[attempt%len(cls)].Put(actx, path, strings.NewReader("after"), nil)
		cancel()
		if err == nil {
			return time.Since(start), attempt, nil
		}
		if kind := failureKind(err); kind != last {
			last = kind
			phases("  %v: %s (%v)", time.Since(start).Round(time.Millisecond), kind, err)
		}
		if time.Since(start) > 30*time.Second || ctx.Err() != nil {
			return 0, attempt, fmt.Errorf("no write accepted within %v: %w", time.Since(start), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func median(ds []time.Duration) time.Duration {
	n := len(ds)
	if n%2 == 1 {
		return ds[n/2]
	}
	return (ds[n/2-1] + ds[n/2]) / 2
}

// failureKind classifies a failed write for the phase log.
func failureKind(err error) string {
	msg := err.Error()
	for _, k := range []string{"connection refused", "deadline exceeded", "no_quorum", "no leader", "unavailable", "503"} {
		if strings.Contains(msg, k) {
			return k
		}
	}
	return "other"
}
