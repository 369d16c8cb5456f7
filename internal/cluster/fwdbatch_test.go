package cluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mure-dev/mure/internal/meta"
)

// A follower's proposals made while others are on their way to the
// leader go in batches, and each proposer gets its own answer: here 64
// acquisitions of distinct files, and one refused (a file another node
// holds), as separate requests would have answered them.
func TestForwardedProposalsBatched(t *testing.T) {
	seats := openSeats(t, nil, nil, nil)
	lead := leaderOf(t, seats)
	follower, other := seats[(lead+1)%3], seats[(lead+2)%3]
	if res, err := other.c.Apply(ctxT(t), meta.Command{Kind: meta.KindAcquire, Path: "held", Node: other.c.NodeID()}); err != nil || res.Err != nil {
		t.Fatalf("acquire held: %v %v", err, res)
	}
	const n = 64
	release := make(chan struct{})
	f := &follower.c.fwd
	f.mu.Lock()
	var waiting atomic.Int64
	f.gate = func() { waiting.Add(1); <-release } // the first requests wait until all are queued
	f.mu.Unlock()
	var wg sync.WaitGroup
	results := make([]*meta.Result, n+1)
	errs := make([]error, n+1)
	for i := range n + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprint("f", i)
			if i == n {
				path = "held"
			}
			results[i], errs[i] = follower.c.Apply(ctxT(t), meta.Command{Kind: meta.KindAcquire, Path: path, Node: follower.c.NodeID()})
		}()
	}
	waitFor(t, "the proposals queued", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.queued == n+1 && int(waiting.Load()) == f.senders
	})
	close(release)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || results[i].Err != nil || results[i].File == nil || results[i].File.Holder != follower.c.NodeID() {
			t.Errorf("acquire f%d: %v %+v", i, errs[i], results[i])
		}
	}
	if errs[n] != nil || results[n].Err == nil {
		t.Errorf("acquire of a file another node holds: %v %+v, want a refusal", errs[n], results[n])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.batches == 0 || f.batched < n+1-maxForwardInflight {
		t.Errorf("%d batches carried %d proposals; want every queued one batched", f.batches, f.batched)
	}
	t.Logf("%d batches carried %d proposals", f.batches, f.batched)
}

// A leader without the batch route (an older binary: 404) gets the
// proposals of a batch one by one, and every later batch for it too;
// each proposer still gets its own answer.
func TestForwardedBatchFallsBackOn404(t *testing.T) {
	var batches, singles atomic.Int64
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/peer/cluster/apply" {
			batches.Add(1)
			http.NotFound(w, r)
			return
		}
		var cmd meta.Command
		if err := json.NewDecoder(r.Body).Decode(&cmd); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, (&meta.Result{Index: uint64(singles.Add(1)), File: &meta.File{Path: cmd.Path}}).Wire())
	}))
	t.Cleanup(leader.Close)
	addr := strings.TrimPrefix(leader.URL, "http://")
	f := &forwarder{c: &Cluster{peers: leader.Client()}}
	// Twice: the first round learns the 404, the second goes one by one
	// at once.
	var refused int64
	for round := range 2 {
		const n = 8
		release := make(chan struct{})
		var waiting atomic.Int64
		f.mu.Lock()
		f.gate = func() { waiting.Add(1); <-release }
		f.mu.Unlock()
		var wg sync.WaitGroup
		paths := make([]string, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := f.forward(ctxT(t), addr, proposal{cmd: &meta.Command{Kind: meta.KindAcquire, Path: fmt.Sprint("f", i)}})
				if err != nil || res.File == nil {
					t.Errorf("round %d: f%d: %v %+v", round, i, err, res)
					return
				}
				paths[i] = res.File.Path
			}()
		}
		waitFor(t, "the proposals queued", func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.queued == (round+1)*n && int(waiting.Load()) == f.senders
		})
		close(release)
		wg.Wait()
		for i, p := range paths {
			if p != fmt.Sprint("f", i) {
				t.Errorf("round %d: proposer %d was answered for %q", round, i, p)
			}
		}
		if round == 0 {
			refused = batches.Load()
		}
	}
	// Senders in flight at once may each have a batch refused before the
	// first 404 is known; none is sent after.
	if b, s := batches.Load(), singles.Load(); refused == 0 || b != refused || s != 16 {
		t.Errorf("the leader refused %d batches, %d in the first round, and saw %d single requests; want no batch after the first round and 16", b, refused, s)
	}
}
