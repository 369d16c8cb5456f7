package cluster

import (
	"time"

	"github.com/hashicorp/memberlist"
)

// rttWindow is how many of the latest round trips to a peer are kept. The
// estimate is the smallest of them: a round trip is the path's delay plus
// whatever queueing and scheduling it met, and only the delay says how
// near a peer is (how busy it is is the load figures' business). Eight
// samples span eight probe rounds, so the estimate follows a path that
// became slower within that many rounds (memberlist probes one member
// per GossipProbeInterval, in turn).
const rttWindow = 8

// rttSamples is the latest round trips to one peer.
type rttSamples struct {
	s [rttWindow]time.Duration
	n int // samples recorded in all
}

func (r *rttSamples) add(d time.Duration) {
	r.s[r.n%rttWindow] = d
	r.n++
}

// min is the smallest sample kept (0: none yet).
func (r *rttSamples) min() time.Duration {
	var m time.Duration
	for i := range min(r.n, rttWindow) {
		if m == 0 || r.s[i] < m {
			m = r.s[i]
		}
	}
	return m
}

// AckPayload implements memberlist.PingDelegate: a probe's answer carries
// nothing of mure's (the round trip is measured, no coordinates are
// exchanged: docs/decisions/0041).
func (g *gossip) AckPayload() []byte { return nil }

// NotifyPingComplete implements memberlist.PingDelegate: memberlist's
// direct probe of other was answered after rtt.
func (g *gossip) NotifyPingComplete(other *memberlist.Node, rtt time.Duration, _ []byte) {
	if rtt <= 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := g.peers[other.Name]; ok {
		p.rtt.add(rtt)
	}
}

// RTT returns this node's estimate of the round-trip time to node id: the
// smallest of the latest gossip probes' round trips (0: none measured
// yet, or id is this node).
func (c *Cluster) RTT(id string) time.Duration {
	if id == c.cfg.NodeID {
		return 0
	}
	g := c.gossip
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := g.peers[id]; ok {
		return p.rtt.min()
	}
	return 0
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
