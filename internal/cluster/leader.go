package cluster

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// leaderState is what this node keeps while it leads: when it became
// leader, whether it has caught up (lease grants allowed), and the lease
// it granted to each node.
type leaderState struct {
	mu    sync.Mutex
	is    bool
	since time.Time
	ready bool
	table map[string]time.Time // node → deadline of the last lease this node granted it (its clock), kept across terms
	epoch uint64
	// term is the raft term this state belongs to. The leadership
	// notifications arrive asynchronously: a node that lost and regained
	// leadership may briefly hold the previous term's flags, which must not
	// be used (its state machine may not have caught up with the term in
	// between).
	term   uint64
	readyC chan struct{}
}

func (c *Cluster) leaderLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case is := <-c.notifyCh:
			c.leader.mu.Lock()
			c.leader.epoch++
			c.leader.is, c.leader.since, c.leader.ready = is, time.Now(), false
			c.leader.term = c.raft.CurrentTerm()
			// The table is not cleared: a lease this node granted stays
			// valid at its holder until it expires, whoever leads now, and
			// the barrier of a write this node committed before stepping
			// down must still reach that holder. Only expired entries go.
			now := time.Now()
			maps.DeleteFunc(c.leader.table, func(_ string, d time.Time) bool { return !now.Before(d) })
			c.leader.readyC = make(chan struct{})
			epoch := c.leader.epoch
			c.leader.mu.Unlock()
			if is {
				c.log.Info("became leader")
				c.goLoop(ctx, func(ctx context.Context) { c.catchUp(ctx, epoch) })
			} else {
				c.log.Info("lost leadership")
			}
		}
	}
}

// catchUp applies everything committed by earlier leaders before this
// leader grants read leases: a lease carries the leader's applied index.
func (c *Cluster) catchUp(ctx context.Context, epoch uint64) {
	for ctx.Err() == nil {
		term := c.raft.CurrentTerm()
		if err := c.raft.Barrier(5 * time.Second).Error(); err != nil {
			if c.raft.State() != raft.Leader {
				return
			}
			continue
		}
		c.leader.mu.Lock()
		if c.leader.epoch == epoch && c.leader.term == term && c.raft.CurrentTerm() == term {
			c.leader.ready = true
			close(c.leader.readyC)
		}
		c.leader.mu.Unlock()
		c.kick()
		return
	}
}

// grantLease records a read lease for node and returns the index the node
// must have applied before using it.
func (c *Cluster) grantLease(node string) (uint64, error) {
	term := c.raft.CurrentTerm()
	c.leader.mu.Lock()
	if !c.leader.is || !c.leader.ready || c.leader.term != term {
		c.leader.mu.Unlock()
		return 0, ErrNotLeaseReady
	}
	c.leader.table[node] = time.Now().Add(c.cfg.Timing.ReadLease)
	c.leader.mu.Unlock()
	// Confirm leadership after recording the lease: a deposed leader
	// must not hand out leases (see docs/protocol.md, "read leases").
	if err := c.confirmLeadership(); err != nil {
		return 0, err
	}
	idx := c.fsm.Applied()
	if c.raft.CurrentTerm() != term {
		return 0, ErrNotLeaseReady
	}
	return idx, nil
}

// confirmLeadership proves that a quorum still followed this node's term at
// some moment after the call, and that everything committed before then is
// applied here: it commits a barrier entry. raft's VerifyLeader is not
// enough: it counts heartbeat answers to requests sent before it was
// called, so a leader paused (SIGSTOP, a long stall) between sending a
// heartbeat and reading the answer resumes "verified" although another
// leader has been elected meanwhile. The robustness test caught exactly
// that: a deposed leader granted itself a lease at its old index and
// served a stale read (docs/reliability.md).
func (c *Cluster) confirmLeadership() error {
	if err := c.raft.Barrier(time.Second).Error(); err != nil {
		return fmt.Errorf("confirm leadership: %w", err)
	}
	return nil
}

// LeaseDeadline returns until when node may still serve reads under a
// lease this node granted while it led — in this term or an earlier one.
func (c *Cluster) LeaseDeadline(node string) (time.Time, bool) {
	c.leader.mu.Lock()
	defer c.leader.mu.Unlock()
	d, ok := c.leader.table[node]
	return d, ok && time.Now().Before(d)
}

// waitInvalidationReady blocks until leases granted by earlier leaders,
// which this leader cannot know, have certainly expired.
func (c *Cluster) waitInvalidationReady(ctx context.Context) error {
	c.leader.mu.Lock()
	if !c.leader.is || c.leader.term != c.raft.CurrentTerm() {
		c.leader.mu.Unlock()
		return ErrNoLeader
	}
	wait := time.Until(c.leader.since.Add(c.cfg.Timing.ReadLease))
	c.leader.mu.Unlock()
	if wait <= 0 {
		return nil
	}
	select {
	case <-time.After(wait):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// IsLeader reports whether this node is the raft leader.
func (c *Cluster) IsLeader() bool { return c.raft.State() == raft.Leader }

// Leader returns the leader's node ID and peer address ("" when unknown).
func (c *Cluster) Leader() (id, peerAddr string) {
	addr, sid := c.raft.LeaderWithID()
	return string(sid), string(addr)
}

// WaitInvalidationReady blocks, on the leader, until leases granted by
// earlier leaders have expired (ErrNoLeader on a follower).
func (c *Cluster) WaitInvalidationReady(ctx context.Context) error {
	return c.waitInvalidationReady(ctx)
}

// LeasedExcept returns, on the leader, the nodes holding a lease from this
// leader, less those in keep.
func (c *Cluster) LeasedExcept(keep []string) []string { return c.leasedExcept(keep) }

// TransferLeadership hands raft leadership to another voter (an error on a
// follower or in a single-voter cluster).
func (c *Cluster) TransferLeadership() error {
	if err := c.raft.LeadershipTransfer().Error(); err != nil {
		return fmt.Errorf("transfer leadership: %w", err)
	}
	return nil
}
