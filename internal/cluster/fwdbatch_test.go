package cluster

import (
	"fmt"
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
