package cluster

import (
	"sync"
	"time"
)

// How the dispatcher role was assigned (Cluster.Dispatcher).
const (
	// DispatchRaftLeader: the raft leader holds the role.
	DispatchRaftLeader = "raft-leader"
	// DispatchPrevious: there is no raft leader yet; the previous holder
	// keeps the role while gossip sees it alive, for at most
	// Timing.DispatchFallback.
	DispatchPrevious = "previous-holder"
	// DispatchLowestAlive: no raft leader for longer than
	// Timing.DispatchFallback (no quorum): the live member with the lowest
	// ID in this node's gossip view holds the role.
	DispatchLowestAlive = "lowest-alive"
)

// dispatchState remembers what the role rule needs across calls.
type dispatchState struct {
	mu              sync.Mutex
	last            string // the holder last returned
	lastByRaft      bool   // ... and it was the raft leader
	leaderlessSince time.Time
}

// Dispatcher returns the node that holds the dispatcher role in this
// node's view, and by which rule. The role never needs a quorum: it is the
// raft leader while there is one (a single holder, agreed by raft); after
// Timing.DispatchFallback without one, it is the live member with the
// lowest ID in the gossip view, so a minority, down to one node, still has
// a dispatcher. Two views may briefly disagree (gossip is not consensus);
// the front door makes that harmless (docs/dispatch.md).
func (c *Cluster) Dispatcher() (id, how string) {
	leader, _ := c.Leader()
	view := c.gossip.view()
	alive := func(id string) bool {
		if id == c.cfg.NodeID {
			return true
		}
		p, ok := view[id]
		return ok && (p.state == GossipAlive || p.state == GossipSuspect)
	}
	d := &c.dispatch
	d.mu.Lock()
	defer d.mu.Unlock()
	if leader != "" && alive(leader) {
		d.leaderlessSince = time.Time{}
		d.last, d.lastByRaft = leader, true
		return leader, DispatchRaftLeader
	}
	now := time.Now()
	if d.leaderlessSince.IsZero() {
		d.leaderlessSince = now
	}
	if d.lastByRaft && alive(d.last) && now.Sub(d.leaderlessSince) < c.cfg.Timing.DispatchFallback {
		return d.last, DispatchPrevious
	}
	lowest := c.cfg.NodeID
	for id, p := range view {
		if p.state == GossipAlive && id < lowest {
			lowest = id
		}
	}
	d.last, d.lastByRaft = lowest, false
	return lowest, DispatchLowestAlive
}
