package sessions

import (
	"cmp"

	"github.com/mure-dev/mure/internal/dispatch"
)

// Placement policies, a kind's place= option (docs/sessions.md).
const (
	// PlaceAsked starts a session on the node asked (the default).
	PlaceAsked = "asked"
	// PlaceFewestSessions: the node with the fewest sessions (paper 004's
	// desktop sessions).
	PlaceFewestSessions = "fewest-sessions"
	// PlaceMostFreeMemory: the node with the most free memory, page cache
	// counted as free (paper 004's application sessions).
	PlaceMostFreeMemory = "most-free-memory"
	// PlaceLeastLoad: the node using the least of its CPU quota.
	PlaceLeastLoad = "least-load"
	// PlaceP2C: two live nodes at random, the one with fewer sessions.
	PlaceP2C = "p2c"
	// PlaceRoundRobin: the live nodes in turn (the baseline).
	PlaceRoundRobin = "round-robin"
)

// PlacePolicies lists the policies a kind may name.
var PlacePolicies = []string{PlaceAsked, PlaceFewestSessions, PlaceMostFreeMemory, PlaceLeastLoad, PlaceP2C, PlaceRoundRobin}

// policy returns kind k's policy object (kept: round robin has a cursor).
func (b *balancer) policy(k Kind) dispatch.Policy {
	if p, ok := b.policies[k.Name]; ok {
		return p
	}
	var p dispatch.Policy
	switch k.Place {
	case PlaceFewestSessions:
		p = dispatch.LeastConnections{}
	case PlaceMostFreeMemory:
		mem := k.Limits.MemoryBytes
		if mem == 0 {
			mem = DefaultSessionMemory
		}
		p = dispatch.MostFreeMemory{ConnMemory: mem}
	case PlaceLeastLoad:
		p = leastLoad{}
	case PlaceP2C:
		p = dispatch.NewPowerOfTwo(b.rnd)
	default:
		p = &dispatch.RoundRobin{}
	}
	b.policies[k.Name] = p
	return p
}

// DefaultSessionCPU is the share of a node's CPU a session placed by
// least-load is assumed to add until its node's figures show it. The
// front door's per-connection estimate (the node's CPU over its
// connections) does not fit sessions: a node's sessions are mostly idle
// shells, and a node without any would be assumed to take a burst for
// free (herding).
const DefaultSessionCPU = 0.1

// leastLoad picks the node using the least of its CPU quota, each
// placement in flight counted as DefaultSessionCPU; ties go to less CPU
// pressure, then fewer sessions, then the least recently chosen.
type leastLoad struct{}

func (leastLoad) Name() string { return PlaceLeastLoad }

func (leastLoad) Choose(_ dispatch.Conn, nodes []dispatch.NodeLoad) (string, bool) {
	cpu := func(n dispatch.NodeLoad) float64 { return n.CPU + float64(n.Assigned)*DefaultSessionCPU }
	found := -1
	for i, n := range nodes {
		if !n.Alive {
			continue
		}
		if found < 0 {
			found = i
			continue
		}
		f := nodes[found]
		if c := cmp.Or(cmp.Compare(cpu(n), cpu(f)), cmp.Compare(n.Load, f.Load), cmp.Compare(n.Connections, f.Connections),
			cmp.Compare(n.LastChosen, f.LastChosen), cmp.Compare(n.ID, f.ID)); c < 0 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return nodes[found].ID, true
}

// byFigures reports whether policy compares gossiped figures (else it
// compares session counts, which the records show).
func byFigures(policy string) bool {
	return policy == PlaceMostFreeMemory || policy == PlaceLeastLoad
}
