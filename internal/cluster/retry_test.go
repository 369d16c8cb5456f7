package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// TestRetriedCommitFencesOnANewLeader: a commit whose answer was lost
// when the leader changed is sent again and applied by the new leader as
// a duplicate. That leader, just elected and not yet caught up, has
// leased no node, while nodes its predecessor leased may still answer for
// the state before the write. The retry must be answered only after the
// invalidation wait (every earlier lease expired) and the barrier, as a
// first attempt is; answered at once, it let such a node serve the old
// version after the write was acknowledged (the robustness test's stale
// read, docs/reliability.md). The new leader's state is set by hand, as
// an election leaves it, so the interleaving does not depend on timing.
func TestRetriedCommitFencesOnANewLeader(t *testing.T) {
	var mu sync.Mutex
	var fenced []*meta.Result
	seats := openSeatsWith(t, func(_ context.Context, r *meta.Result) error {
		mu.Lock()
		defer mu.Unlock()
		fenced = append(fenced, r)
		return nil
	}, nil)
	c := seats[0].c
	ctx := ctxT(t)
	waitFor(t, "the seat caught up, leased and listed as active", func() bool {
		c.leader.mu.Lock()
		ready := c.leader.ready
		c.leader.mu.Unlock()
		var active bool
		c.FSM().Read(func(st *meta.State) {
			n := st.Node(c.NodeID())
			active = n != nil && n.State == meta.NodeActive
		})
		_, leased := c.LeaseDeadline(c.NodeID())
		return ready && leased && active
	})
	write := meta.Command{Kind: meta.KindCommit, Take: true, Path: "f", Node: c.NodeID(), BlobID: "b1", Size: 1, Idem: "write-1"}
	if res, err := c.Apply(ctx, write); err != nil || res.Err != nil || res.Duplicate {
		t.Fatalf("first attempt: %v %+v", err, res)
	}
	mu.Lock()
	fenced = nil // a one-node take fences nothing; only the retry counts
	mu.Unlock()

	// The leader changes under the write: the new one was elected just now,
	// has not caught up (so grants no lease) and has leased nobody.
	c.leader.mu.Lock()
	elected := time.Now()
	c.leader.since, c.leader.ready = elected, false
	clear(c.leader.table)
	c.leader.mu.Unlock()

	res, err := c.Apply(ctx, write)
	answered := time.Now()
	if err != nil || res.Err != nil || !res.Duplicate {
		t.Fatalf("retry: %v %+v, want a duplicate", err, res)
	}
	if earliest := elected.Add(c.cfg.Timing.ReadLease); answered.Before(earliest) {
		t.Errorf("the retry was answered %v after the election, while leases of the previous leader (%v) may still be valid", answered.Sub(elected), c.cfg.Timing.ReadLease)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(fenced) != 1 || fenced[0].File == nil || fenced[0].File.Path != "f" {
		t.Fatalf("barriers run for the retry: %+v, want one for f", fenced)
	}
}
