//go:build linux

package systest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/lincheck"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestLinearizabilityUnderFaults runs concurrent clients pinned to nodes
// (retries off) doing reads, writes, compare-and-sets, creates and deletes
// on three files while nodes are killed and restarted, paused and cut off,
// then checks the history with porcupine. The short version runs one
// randomized seed; MURE_ROBUSTNESS_RUNS=N runs N seeds (make
// test-robustness); MURE_SEED=S replays one seed; MURE_TIMING=default runs
// the nodes with the production timings instead of the fast ones (as
// TestLinearizabilityDefaultTimings does); MURE_NODE_ARGS adds arguments
// to the nodes' command line.
func TestLinearizabilityUnderFaults(t *testing.T) {
	seededRuns(t, 8*time.Second, 20*time.Second, func(t *testing.T, seed int64, dur time.Duration) {
		h, _ := runWithFaults(t, seed, dur, os.Getenv("MURE_TIMING"), nil)
		checkLinearizable(t, h, true)
	})
}

// TestLinearizabilityDefaultTimings is TestLinearizabilityUnderFaults
// with the production timings (raft 300 ms, read lease 1 s; decision
// 0017) instead of the test clusters' fast ones: elections, lease expiries
// and gossip verdicts take longer, so the same faults meet the protocol in
// other states. The suite runs one short seed; make
// test-robustness-default runs 20 of 20 s.
func TestLinearizabilityDefaultTimings(t *testing.T) {
	seededRuns(t, 8*time.Second, 20*time.Second, func(t *testing.T, seed int64, dur time.Duration) {
		h, _ := runWithFaults(t, seed, dur, "default", nil)
		checkLinearizable(t, h, true)
	})
}

// seededRuns runs fn as a subtest per seed: one randomized seed for dur,
// or MURE_ROBUSTNESS_RUNS=N seeds for robustDur each (make
// test-robustness). MURE_ROBUSTNESS_DURATION sets the duration of either;
// MURE_SEED=S replays one seed.
func seededRuns(t *testing.T, dur, robustDur time.Duration, fn func(t *testing.T, seed int64, dur time.Duration)) {
	runs := 1
	if v, err := strconv.Atoi(os.Getenv("MURE_ROBUSTNESS_RUNS")); err == nil && v > 0 {
		runs, dur = v, robustDur
	}
	if v, err := time.ParseDuration(os.Getenv("MURE_ROBUSTNESS_DURATION")); err == nil && v > 0 {
		dur = v
	}
	name := t.Name()
	for range runs {
		seed := time.Now().UnixNano()
		if v, err := strconv.ParseInt(os.Getenv("MURE_SEED"), 10, 64); err == nil {
			seed = v
		}
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Logf("seed %d (replay: MURE_SEED=%d go test ./systest -run %s)", seed, seed, name)
			fn(t, seed, dur)
		})
	}
}

// TestLinearizabilityCatchesUnsafeReads proves the checker bites: with a
// protocol that serves local copies without its checks, a node cut off from
// the others serves a version older than an acknowledged write, and the
// checker says so. The same scenario with the real protocol passes.
func TestLinearizabilityCatchesUnsafeReads(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		wantOK bool
	}{
		{"real protocol", nil, true},
		{"broken protocol", []string{"--debug-unsafe-reads"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testcluster.StartProc(t, 3, append([]string{"--debug-faults"}, tc.args...)...)
			ctx := procCtx(t, 30*time.Second)
			if _, err := c.Client(0).SetConfig(ctx, "resume", "immediate"); err != nil {
				t.Fatal(err)
			}
			h := lincheck.NewHistory()
			writer := client.New([]string{c.HTTPAddr(0)}, client.WithToken(c.Token()), client.WithAttempts(1))
			opWrite(ctx, h, 0, writer, "k", "v1")
			// Node 2's own view must say its copy is valid and replicated.
			testcluster.WaitFor(t, 10*time.Second, "node 2 to hold a valid copy", func() bool {
				st, err := client.New([]string{c.HTTPAddr(2)}, client.WithToken(c.Token())).FileStatus(ctx, "k")
				return err == nil && strings.Contains(string(st), `"local_copy_valid": true`) && strings.Contains(string(st), `"replicated"`)
			})
			opRead(ctx, h, 1, c.HTTPAddr(2), "k")
			c.Isolate(2, true)
			opWrite(ctx, h, 0, writer, "k", "v2")
			var seen []string
			for i := 0; i < 5; i++ {
				v, _, _ := opRead(ctx, h, 1, c.HTTPAddr(2), "k")
				seen = append(seen, v)
			}
			st, _ := client.New([]string{c.HTTPAddr(2)}, client.WithToken(c.Token())).FileStatus(ctx, "k")
			c.Isolate(2, false)
			t.Logf("node 2 read %v while cut off; its view: %s", seen, strings.Join(strings.Fields(string(st)), " "))
			res, err := h.Check(30*time.Second, filepath.Join(t.TempDir(), "viz.html"))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d operations %v: %s", h.Len(), h.Counts(), res)
			if ok := res == porcupine.Ok; ok != tc.wantOK {
				t.Fatalf("checker verdict %s, want linearizable=%v", res, tc.wantOK)
			}
		})
	}
}

func checkLinearizable(t *testing.T, h *lincheck.History, strict bool) {
	t.Helper()
	viz := filepath.Join(os.TempDir(), fmt.Sprintf("mure-linear-%d.html", time.Now().UnixNano()))
	start := time.Now()
	// A checker verdict of Unknown (timeout) counts as a failure; the long
	// runs record larger histories and get more time.
	limit := 2 * time.Minute
	if os.Getenv("MURE_ROBUSTNESS_RUNS") != "" {
		limit = 6 * time.Minute
	}
	res, err := h.Check(limit, viz)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d operations %v, %d left open; checked in %v: %s", h.Len(), h.Counts(), h.Open(), time.Since(start).Round(time.Millisecond), res)
	if res != porcupine.Ok {
		if err := h.Save(viz + ".json"); err != nil {
			t.Log(err)
		} else {
			t.Logf("history saved in %s (check it again: MURE_HISTORY=%s go test ./internal/lincheck -run TestSavedHistory -v)", viz+".json", viz+".json")
		}
	}
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		ex := viz + ".txt"
		_ = os.WriteFile(ex, []byte(h.Explain(time.Minute)), 0o644)
		t.Fatalf("history is not linearizable; visualisation in %s, the failing file's operations in %s", viz, ex)
	default:
		t.Fatalf("checker gave up (%s): counts as a failure", res)
	}
}

// runWithFaults drives the load and the fault schedule for dur, on nodes
// with the named timing ("": the test clusters' fast one) and settings
// set before the load starts.
func runWithFaults(t *testing.T, seed int64, dur time.Duration, timing string, settings map[string]string) (*lincheck.History, *testcluster.ProcCluster) {
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	args := []string{"--debug-faults"}
	if tm := timing; tm != "" {
		args = append(args, "--timing", tm) // the last --timing wins over the test clusters' fast one
		t.Logf("timing %s", tm)
	}
	if extra := strings.Fields(os.Getenv("MURE_NODE_ARGS")); len(extra) > 0 {
		// e.g. --debug-unsafe-reads: a deliberately broken protocol the
		// checker must catch (docs/reliability.md)
		args = append(args, extra...)
		t.Logf("node arguments %v", extra)
	}
	c := testcluster.StartProc(t, 3, args...)
	ctx := procCtx(t, dur+2*time.Minute)
	policy := []string{"immediate", "idle", "reads"}[rng.IntN(3)]
	for k, v := range map[string]string{"resume": policy, "resume.idle": "200ms", "resume.reads": "2"} {
		if _, err := c.Client(0).SetConfig(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("resume policy %s", policy)
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if _, err := c.Client(0).SetConfig(ctx, k, settings[k]); err != nil {
			t.Fatalf("config %s=%s: %v", k, settings[k], err)
		}
	}
	h := lincheck.NewHistory()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for ci := 0; ci < 6; ci++ {
		crng := rand.New(rand.NewPCG(uint64(seed), uint64(ci+2)))
		cl := client.New([]string{c.HTTPAddr(ci % 3)}, client.WithToken(c.Token()), client.WithAttempts(1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			clientLoop(ctx, h, ci, c.HTTPAddr(ci%3), cl, crng, stop)
		}()
	}
	deadline := time.Now().Add(dur)
	var log []string
	for time.Now().Before(deadline) {
		pause := func(lo, hi int) { time.Sleep(time.Duration(lo+rng.IntN(hi-lo)) * time.Millisecond) }
		pause(200, 600)
		i := rng.IntN(3)
		if rng.IntN(3) == 0 {
			if l := c.Leader(); l >= 0 {
				i = l
			}
		}
		switch rng.IntN(3) {
		case 0:
			log = append(log, fmt.Sprintf("kill %d", i))
			c.Kill(i)
			pause(200, 800)
			c.Restart(i)
		case 1:
			log = append(log, fmt.Sprintf("stop %d", i))
			c.Pause(i)
			pause(300, 1200)
			c.Resume(i)
		case 2:
			log = append(log, fmt.Sprintf("isolate %d", i))
			c.Isolate(i, true)
			pause(300, 1500)
			c.Isolate(i, false)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("faults: %s", strings.Join(log, ", "))
	checkConverged(t, c)
	return h, c
}

// checkConverged waits until every node has applied the same raft index and
// compares their records of the test's files: the state machine must be
// identical everywhere (a divergent node would answer from a state no other
// node ever had).
func checkConverged(t *testing.T, c *testcluster.ProcCluster) {
	t.Helper()
	ctx := procCtx(t, 30*time.Second)
	type view struct {
		Version          uint64
		Deleted, Pending bool
		Valid            []string
	}
	var last map[string]string
	converged := func() bool {
		views := map[string]string{}
		for i := range 3 {
			for _, k := range []string{"k0", "k1", "k2"} {
				raw, err := client.New([]string{c.HTTPAddr(i)}, client.WithToken(c.Token()), client.WithAttempts(1)).FileStatus(ctx, k)
				if err != nil {
					if errors.Is(err, client.ErrNotFound) {
						raw = []byte("absent")
					} else {
						return false
					}
				}
				var v view
				_ = json.Unmarshal(raw, &v)
				views[fmt.Sprint(i, k)] = fmt.Sprintf("%d/%v/%v", v.Version, v.Deleted, v.Pending)
			}
		}
		last = views
		for _, k := range []string{"k0", "k1", "k2"} {
			if views["0"+k] != views["1"+k] || views["1"+k] != views["2"+k] || strings.HasSuffix(views["0"+k], "/true") {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(20 * time.Second)
	for !converged() {
		if time.Now().After(deadline) {
			t.Fatalf("the nodes' records did not converge (node+file: version/deleted/pending): %v", last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("converged: %v", last)
}

func clientLoop(ctx context.Context, h *lincheck.History, id int, addr string, cl *client.Client, rng *rand.Rand, stop <-chan struct{}) {
	keys := []string{"k0", "k1", "k2"}
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return
		default:
		}
		key := keys[rng.IntN(len(keys))]
		value := fmt.Sprintf("c%d-%d", id, seq)
		var ok bool
		switch r := rng.IntN(100); {
		case r < 45:
			_, _, ok = opRead(ctx, h, id, addr, key)
		case r < 70:
			ok = opWrite(ctx, h, id, cl, key, value)
		case r < 92:
			cur, etag, found := opRead(ctx, h, id, addr, key)
			if found && cur != "" {
				ok = opPut(ctx, h, id, cl, lincheck.Input{Kind: lincheck.CAS, Key: key, Value: value, Expect: cur}, &client.PutOptions{IfMatch: etag})
			} else if found {
				ok = opPut(ctx, h, id, cl, lincheck.Input{Kind: lincheck.Create, Key: key, Value: value}, &client.PutOptions{IfNoneMatch: true})
			}
		default:
			ok = opDelete(ctx, h, id, cl, key)
		}
		if !ok {
			time.Sleep(50 * time.Millisecond) // its node is down or cut off
		}
	}
}

const opTimeout = 3 * time.Second

// opRead records a GET; found reports a definite answer (value "" = absent).
// It follows redirects itself, to note which nodes answered.
func opRead(ctx context.Context, h *lincheck.History, id int, addr, key string) (value, etag string, found bool) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	in := lincheck.Input{Kind: lincheck.Read, Key: key}
	call := h.Now()
	var trail []string
	hc := &http.Client{Transport: testcluster.Authorize(nil), CheckRedirect: func(req *http.Request, via []*http.Request) error {
		trail = append(trail, req.Response.Header.Get("X-Mure-Node")+"→")
		if len(via) >= 10 {
			return errors.New("too many redirects")
		}
		return nil
	}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/files/"+key, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return "", "", false // unknown: no information
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	note := strings.Join(trail, "") + resp.Header.Get("X-Mure-Node") + " " + resp.Header.Get("Etag") + " " + resp.Header.Get("X-Mure-Judged") + " " + resp.Header.Get("X-Mure-Record")
	switch {
	case err == nil && resp.StatusCode == http.StatusOK:
		h.AddNote(id, in, call, lincheck.Output{Value: string(b)}, note)
		return string(b), strings.Trim(resp.Header.Get("Etag"), `"`), true
	case err == nil && resp.StatusCode == http.StatusNotFound:
		h.AddNote(id, in, call, lincheck.Output{}, note)
		return "", "", true
	}
	return "", "", false
}

func opWrite(ctx context.Context, h *lincheck.History, id int, cl *client.Client, key, value string) bool {
	return opPut(ctx, h, id, cl, lincheck.Input{Kind: lincheck.Write, Key: key, Value: value}, nil)
}

func opPut(ctx context.Context, h *lincheck.History, id int, cl *client.Client, in lincheck.Input, o *client.PutOptions) bool {
	if o == nil {
		o = &client.PutOptions{}
	}
	o.IdempotencyKey = idemKey(id, in)
	call := h.Now()
	bounded, err := settle(ctx, in.Kind, func(ctx context.Context) error {
		_, err := cl.Put(ctx, in.Key, strings.NewReader(in.Value), o)
		return err
	})
	return record(h, id, in, call, err, bounded)
}

func opDelete(ctx context.Context, h *lincheck.History, id int, cl *client.Client, key string) bool {
	in := lincheck.Input{Kind: lincheck.Delete, Key: key}
	o := &client.DeleteOptions{IdempotencyKey: idemKey(id, in)}
	call := h.Now()
	bounded, err := settle(ctx, in.Kind, func(ctx context.Context) error { return cl.Delete(ctx, key, o) })
	return record(h, id, in, call, err, bounded)
}

// idemKey names one write of the history (written values are unique; a
// delete gets its call time).
func idemKey(id int, in lincheck.Input) string {
	if in.Kind == lincheck.Delete {
		return fmt.Sprintf("lin-%d-del-%d", id, time.Now().UnixNano())
	}
	return fmt.Sprintf("lin-%d-%s", id, in.Value)
}

// settleFor bounds how long a client retries a write of unknown outcome.
const settleFor = 15 * time.Second

// settle runs a write (one attempt of at most opTimeout), and, while its
// outcome is unknown, sends it again with the same idempotency key until
// an attempt succeeds or settleFor has passed (decision 0054). A success
// of any attempt means the write took effect exactly once, between the
// first call and that answer: the state machine applies a key once
// (internal/meta/idem.go). A retry aborted by a concurrent write (409)
// is sent again too. A compare-and-set refused on a retry is bounded:
// the version it expects is gone for good (versions only grow), so the
// first attempt took effect before, or never will. A refused create or
// delete proves nothing — the first attempt may still be on its way to
// the log, and its condition may hold again — so the error of the first
// attempt stands and the write stays of unknown outcome, to the end of
// time; so does one still unknown after settleFor.
func settle(ctx context.Context, kind lincheck.Kind, attempt func(context.Context) error) (bounded bool, err error) {
	once := func() error {
		ctx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		return attempt(ctx)
	}
	first := once()
	if o, sent := outcomeOf(first, kind); !sent || o != lincheck.Unknown {
		return false, first
	}
	for deadline := time.Now().Add(settleFor); time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(100 * time.Millisecond)
		err := once()
		if err == nil {
			return false, nil
		}
		if o, sent := outcomeOf(err, kind); sent && o == lincheck.Refused {
			return kind == lincheck.CAS, first
		}
	}
	return false, first
}

// record adds a write's result to the history (of unknown outcome but
// bounded: see settle); false when the node did not answer.
func record(h *lincheck.History, id int, in lincheck.Input, call int64, err error, bounded bool) bool {
	out, sent := outcomeOf(err, in.Kind)
	switch {
	case !sent:
		return false
	case out == lincheck.Unknown && bounded:
		h.AddBounded(id, in, call)
	default:
		h.Add(id, in, call, lincheck.Output{Outcome: out})
	}
	return out != lincheck.Unknown
}

// outcomeOf classifies a write's result; sent is false when the request
// never reached a node (no effect, nothing to record).
func outcomeOf(err error, kind lincheck.Kind) (out lincheck.Outcome, sent bool) {
	var apiErr *client.APIError
	switch {
	case err == nil:
		return lincheck.OK, true
	case errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, client.ErrOutcomeUnknown):
		// Never sent: no effect. (The client reports a dial error that
		// follows a written try, e.g. Go's replay of a keyed request on a
		// reused connection, as an unknown outcome instead.)
		return lincheck.Unknown, false
	case errors.As(err, &apiErr) && !errors.Is(err, client.ErrOutcomeUnknown) &&
		(apiErr.Status == http.StatusPreconditionFailed || apiErr.Status == http.StatusNotFound && kind == lincheck.Delete):
		return lincheck.Refused, true
	case errors.As(err, &apiErr) && !errors.Is(err, client.ErrOutcomeUnknown) && apiErr.Status == http.StatusConflict:
		return lincheck.Aborted, true
	}
	return lincheck.Unknown, true
}
