//go:build linux

package systest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/lincheck"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestLinearizabilityThroughForwarding: concurrent clients read, write,
// compare-and-set, create and delete three files, each through a node
// that held neither a copy nor the write right of the file when the run
// began, asking it to forward (X-Mure-Forward: 1), while the holder of a
// file is killed (mid-forward, as traffic never stops) and restarted.
// The history must be linearizable, and the forwarders must actually
// have forwarded reads and writes (their metrics count them).
// MURE_ROBUSTNESS_RUNS=N runs N seeds (make test-robustness), MURE_SEED=S
// replays one.
func TestLinearizabilityThroughForwarding(t *testing.T) {
	seededRuns(t, 8*time.Second, 8*time.Second, runThroughForwarding)
}

func runThroughForwarding(t *testing.T, seed int64, dur time.Duration) {
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	c := testcluster.StartProc(t, 3)
	ctx := procCtx(t, dur+90*time.Second)
	// Rights stay with their writer, so replication stays suspended: the
	// nodes that did not write keep no copy.
	for k, v := range map[string]string{"resume": "idle", "resume.idle": "1h"} {
		if _, err := c.Client(0).SetConfig(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	h := lincheck.NewHistory()
	keys := []string{"k0", "k1", "k2"}
	writer := client.New([]string{c.HTTPAddr(0)}, client.WithToken(c.Token()), client.WithAttempts(1))
	for _, k := range keys {
		if !opWrite(ctx, h, 0, writer, k, "seed-"+k) {
			t.Fatalf("seed write of %s failed", k)
		}
	}
	// Each operation goes to a node that holds neither a copy nor the
	// right of its file, as last seen: rights move (a delete clears the
	// right, a forwarder takes it when its holder is dead).
	out := &outsiders{m: map[string]int{}}
	out.refresh(ctx, t, c, keys)
	for _, k := range keys {
		if _, ok := out.get(k); !ok {
			t.Fatalf("%s: no node without a copy", k)
		}
	}
	stopRefresh := make(chan struct{})
	refreshed := make(chan struct{})
	go func() {
		defer close(refreshed)
		for {
			select {
			case <-stopRefresh:
				return
			case <-time.After(100 * time.Millisecond):
			}
			out.refresh(ctx, t, c, keys)
		}
	}()
	fwd := make([]*client.Client, 3)
	for i := range fwd {
		fwd[i] = client.New([]string{c.HTTPAddr(i)}, client.WithToken(c.Token()), client.WithAttempts(1), client.WithForwarding())
	}
	var forwardedReads atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for ci := 1; ci <= 4; ci++ {
		crng := rand.New(rand.NewPCG(uint64(seed), uint64(ci)))
		wg.Go(func() {
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				k := keys[crng.IntN(len(keys))]
				node, _ := out.get(k)
				if !forwardedOp(ctx, h, ci, c.HTTPAddr(node), fwd[node], k, fmt.Sprintf("c%d-%d", ci, seq), crng, &forwardedReads) {
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	deadline := time.Now().Add(dur)
	var faults []string
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(700+rng.IntN(800)) * time.Millisecond)
		k := keys[rng.IntN(len(keys))]
		holder, _ := fileHolders(ctx, t, c, c.Running()[0], k)
		i := slices.IndexFunc([]int{0, 1, 2}, func(i int) bool { return c.ID(i) == holder })
		if i < 0 {
			continue // no holder now
		}
		faults = append(faults, fmt.Sprintf("kill %d (holder of %s)", i, k))
		c.Kill(i)
		time.Sleep(time.Duration(300+rng.IntN(500)) * time.Millisecond)
		c.Restart(i)
	}
	close(stop)
	wg.Wait()
	close(stopRefresh)
	<-refreshed
	t.Logf("faults: %s", strings.Join(faults, ", "))
	if !slices.ContainsFunc(faults, func(f string) bool { return strings.HasPrefix(f, "kill") }) {
		t.Fatal("no holder was killed")
	}
	checkConverged(t, c)
	checkLinearizable(t, h, true)
	var reads, writes, failed float64
	for i := range 3 {
		reads += scrapeMetricOr(t, c.HTTPAddr(i), `mure_files_forwarded_total{op="read"}`)
		writes += scrapeMetricOr(t, c.HTTPAddr(i), `mure_files_forwarded_total{op="write"}`)
		failed += scrapeMetricOr(t, c.HTTPAddr(i), `mure_files_forward_failures_total{op="write"}`)
	}
	t.Logf("forwarded: %v reads, %v writes (%v writes lost their holder midway); %d reads answered through forwarding",
		reads, writes, failed, forwardedReads.Load())
	if reads < 1 || writes < 1 || forwardedReads.Load() < 1 {
		t.Fatalf("forwarding was not exercised: %v reads, %v writes forwarded, %d answered", reads, writes, forwardedReads.Load())
	}
}

// forwardedOp runs one random operation through node addr with
// forwarding; false when the node did not answer.
func forwardedOp(ctx context.Context, h *lincheck.History, id int, addr string, cl *client.Client, key, value string, rng *rand.Rand, fwdReads *atomic.Int64) bool {
	switch r := rng.IntN(100); {
	case r < 45:
		_, _, ok := opReadForwarded(ctx, h, id, addr, key, fwdReads)
		return ok
	case r < 70:
		return opWrite(ctx, h, id, cl, key, value)
	case r < 92:
		cur, etag, found := opReadForwarded(ctx, h, id, addr, key, fwdReads)
		switch {
		case found && cur != "":
			return opPut(ctx, h, id, cl, lincheck.Input{Kind: lincheck.CAS, Key: key, Value: value, Expect: cur}, &client.PutOptions{IfMatch: etag})
		case found:
			return opPut(ctx, h, id, cl, lincheck.Input{Kind: lincheck.Create, Key: key, Value: value}, &client.PutOptions{IfNoneMatch: true})
		}
		return false
	}
	return opDelete(ctx, h, id, cl, key)
}

// opReadForwarded records a GET sent with X-Mure-Forward: 1 (redirects
// are not followed: the node must answer itself).
func opReadForwarded(ctx context.Context, h *lincheck.History, id int, addr, key string, fwdReads *atomic.Int64) (value, etag string, found bool) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	in := lincheck.Input{Kind: lincheck.Read, Key: key}
	call := h.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/files/"+key, nil)
	req.Header.Set("X-Mure-Forward", "1")
	hc := &http.Client{Transport: testcluster.Authorize(nil), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		return "", "", false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	note := resp.Header.Get("X-Mure-Node") + "⇐" + resp.Header.Get("X-Mure-Forwarded-From") + " " + resp.Header.Get("Etag")
	switch {
	case err == nil && resp.StatusCode == http.StatusOK:
		if resp.Header.Get("X-Mure-Forwarded-From") != "" {
			fwdReads.Add(1)
		}
		h.AddNote(id, in, call, lincheck.Output{Value: string(b)}, note)
		return string(b), strings.Trim(resp.Header.Get("Etag"), `"`), true
	case err == nil && resp.StatusCode == http.StatusNotFound:
		h.AddNote(id, in, call, lincheck.Output{}, note)
		return "", "", true
	}
	return "", "", false
}

// outsiders is, by file, a node that held neither a valid copy nor the
// write right when last looked at.
type outsiders struct {
	mu sync.Mutex
	m  map[string]int
}

func (o *outsiders) get(k string) (int, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	i, ok := o.m[k]
	return i, ok
}

func (o *outsiders) refresh(ctx context.Context, t *testing.T, c *testcluster.ProcCluster, keys []string) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for _, k := range keys {
		for _, from := range c.Running() {
			holder, valid := fileHolders(ctx, t, c, from, k)
			if holder == "" && valid == nil {
				continue
			}
			for i := range 3 {
				if id := c.ID(i); id != holder && !slices.Contains(valid, id) {
					o.mu.Lock()
					o.m[k] = i
					o.mu.Unlock()
					break
				}
			}
			break
		}
	}
}

// fileHolders returns the write-right holder and valid nodes of path as
// node i sees them ("" and nil when it cannot tell).
func fileHolders(ctx context.Context, t *testing.T, c *testcluster.ProcCluster, i int, path string) (string, []string) {
	raw, err := client.New([]string{c.HTTPAddr(i)}, client.WithToken(c.Token()), client.WithAttempts(1)).FileStatus(ctx, path)
	if err != nil {
		return "", nil
	}
	var st struct {
		Holder string   `json:"holder"`
		Valid  []string `json:"valid"`
	}
	_ = json.Unmarshal(raw, &st)
	return st.Holder, st.Valid
}

// scrapeMetricOr is scrapeMetric for a series that may not exist yet (0).
func scrapeMetricOr(t *testing.T, addr, name string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}
