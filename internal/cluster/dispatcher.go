package cluster

import (
	"sync"
	"time"
)

// How the dispatcher role was assigned (Cluster.Dispatcher).
const (
	// DispatchRaftLeader: the raft leader holds the role.
	DispatchRaftLeader = "raft-leader"
	// DispatchPrevious: there is no raft leader yet (for less than
	// Timing.DispatchFallback), or a new one has led for less than
	// Timing.DispatchHold; the previous holder keeps the role meanwhile if
	// it answers gossip.
	DispatchPrevious = "previous-holder"
	// DispatchLowestAlive: no raft leader for longer than
	// Timing.DispatchFallback (no quorum): the live member with the lowest
	// ID in this node's gossip view holds the role.
	DispatchLowestAlive = "lowest-alive"
	// DispatchNone: no raft leader for less than Timing.DispatchFallback
	// and no previous holder that answers: nobody holds the role yet.
	DispatchNone = "none"
)

// dispatchState remembers what the role rule needs across calls.
type dispatchState struct {
	mu              sync.Mutex
	last            string // the holder last returned
	lastByRaft      bool   // ... and it was the raft leader
	leaderlessSince time.Time
	// A raft leader other than the holder, and since when it leads.
	next      string
	nextSince time.Time
}

// Dispatcher returns the node that holds the dispatcher role in this
// node's view, and by which rule. The role never needs a quorum: it is the
// raft leader while there is one (a single holder, agreed by raft); after
// Timing.DispatchFallback without one, it is the live member with the
// lowest ID in the gossip view, so a minority, down to one node, still has
// a dispatcher. Two views may briefly disagree (gossip is not consensus);
// the front door makes that harmless (docs/dispatch.md).
//
// The role does not follow a leadership flap: when another node wins an
// election while the holder is still alive in gossip (a saturated leader
// missing its lease, then winning again), the holder keeps the role until
// the new leader has led for Timing.DispatchHold. A holder that misses
// gossip's probes (suspect) hands over at once.
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
	// A holder keeps the role past a change of leader only while it
	// answers gossip's probes: a suspect one is most likely dead.
	answering := func(id string) bool {
		if id == c.cfg.NodeID {
			return true
		}
		p, ok := view[id]
		return ok && p.state == GossipAlive
	}
	d := &c.dispatch
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	if leader != "" && alive(leader) {
		d.leaderlessSince = time.Time{}
		if leader != d.last && d.lastByRaft && answering(d.last) {
			if d.next != leader {
				d.next, d.nextSince = leader, now
			}
			if now.Sub(d.nextSince) < c.cfg.Timing.DispatchHold {
				return d.last, DispatchPrevious
			}
		}
		d.last, d.lastByRaft, d.next = leader, true, ""
		return leader, DispatchRaftLeader
	}
	if d.leaderlessSince.IsZero() {
		d.leaderlessSince = now
	}
	if now.Sub(d.leaderlessSince) < c.cfg.Timing.DispatchFallback {
		if d.lastByRaft && answering(d.last) {
			return d.last, DispatchPrevious
		}
		// No holder yet rather than a guess: a node that has just started
		// (or lost its leader) and sees only part of the cluster would
		// otherwise name itself, and two SYN masters are not harmless.
		return "", DispatchNone
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
