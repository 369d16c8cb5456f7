package dispatch

import "math/rand/v2"

// RoundRobin takes the alive nodes in ID order, one after the other. It
// remembers the last ID it chose rather than an index, so a node joining or
// dying does not make it skip or repeat the others. Use a pointer.
type RoundRobin struct {
	last string
}

// Name implements Policy.
func (*RoundRobin) Name() string { return NameRoundRobin }

// Choose returns the alive node with the smallest ID above the last one
// chosen, wrapping round to the smallest ID.
func (r *RoundRobin) Choose(_ Conn, nodes []NodeLoad) (string, bool) {
	next, first := "", ""
	for _, n := range nodes {
		if !n.Alive {
			continue
		}
		if first == "" || n.ID < first {
			first = n.ID
		}
		if n.ID > r.last && (next == "" || n.ID < next) {
			next = n.ID
		}
	}
	if next == "" {
		next = first
	}
	if next == "" {
		return "", false
	}
	r.last = next
	return next, true
}

// LeastConnections picks the node with the fewest connections, counting
// both the reported ones and the Scheduler's assignments since the report,
// so a burst between two reports spreads instead of herding to one node.
type LeastConnections struct{}

// Name implements Policy.
func (LeastConnections) Name() string { return NameLeastConnections }

// Choose implements Policy.
func (LeastConnections) Choose(_ Conn, nodes []NodeLoad) (string, bool) {
	return best(nodes, func(a, b NodeLoad) bool { return a.busy() < b.busy() })
}

// DefaultConnCPU is the CPU fraction LeastLoad assumes a new connection
// adds to a node that reports no connections to estimate it from.
const DefaultConnCPU = 0.02

// LeastLoad picks the node using the least of its CPU quota. CPU is only
// measured at each report, so every connection assigned since is assumed
// to add ConnCPU; without that, all new connections would go to the node
// that was idlest at the last report. Ties go to the shorter run queue,
// then to fewer connections.
type LeastLoad struct {
	// ConnCPU is the CPU fraction one assigned connection is assumed to add
	// until the next report. 0 estimates it per node as CPU / Connections
	// (DefaultConnCPU when the node reports none). Too small herds; too
	// large degrades to least connections.
	ConnCPU float64
}

// Name implements Policy.
func (LeastLoad) Name() string { return NameLeastLoad }

// Choose implements Policy.
func (p LeastLoad) Choose(_ Conn, nodes []NodeLoad) (string, bool) {
	return best(nodes, func(a, b NodeLoad) bool {
		if ca, cb := p.projected(a), p.projected(b); ca != cb {
			return ca < cb
		}
		if a.Load != b.Load {
			return a.Load < b.Load
		}
		return a.busy() < b.busy()
	})
}

// projected is the node's CPU demand with its unreported assignments
// added, each
// costing what the connections behind the report cost: the CPU over the
// assignments the report covered (short connections, which the open
// connections at report time undercount), else over the open connections.
func (p LeastLoad) projected(n NodeLoad) float64 {
	cost := p.ConnCPU
	if cost == 0 {
		cost = DefaultConnCPU
		switch {
		case n.CPU <= 0:
		case n.Covered > 0:
			cost = n.CPU / float64(n.Covered)
		case n.Connections > 0:
			cost = n.CPU / float64(n.Connections)
		}
	}
	// A saturated node's CPU stops at its quota however long its queue:
	// its open connections, each costing as much, show the queue.
	return max(n.CPU, float64(n.Connections)*cost) + float64(n.Assigned)*cost
}

// DefaultConnMemory is the memory MostFreeMemory assumes a new connection
// takes until the node's next report.
const DefaultConnMemory = 32 << 20

// MostFreeMemory picks the node with the most free memory, as 004 places
// new application sessions. Ties go to fewer connections.
type MostFreeMemory struct {
	// ConnMemory is the memory, in bytes, one assigned connection is assumed
	// to take until the next report (0: DefaultConnMemory). It keeps a burst
	// from herding to the node that had the most free at the last report.
	ConnMemory int64
}

// Name implements Policy.
func (MostFreeMemory) Name() string { return NameMostFreeMemory }

// Choose implements Policy.
func (p MostFreeMemory) Choose(_ Conn, nodes []NodeLoad) (string, bool) {
	cost := p.ConnMemory
	if cost == 0 {
		cost = DefaultConnMemory
	}
	free := func(n NodeLoad) int64 { return n.FreeMemory - int64(n.Assigned)*cost }
	return best(nodes, func(a, b NodeLoad) bool {
		if fa, fb := free(a), free(b); fa != fb {
			return fa > fb
		}
		return a.busy() < b.busy()
	})
}

// PowerOfTwo ("p2c") samples two distinct alive nodes at random and takes
// the one with fewer connections (reported plus assigned). Sampling keeps
// several dispatchers, or stale figures, from all picking the same node,
// while still steering away from the busy ones.
type PowerOfTwo struct {
	rnd *rand.Rand
}

// NewPowerOfTwo returns a p2c policy drawing from rnd; nil uses a source
// seeded at random. Tests pass a seeded source for reproducible choices.
func NewPowerOfTwo(rnd *rand.Rand) *PowerOfTwo {
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &PowerOfTwo{rnd: rnd}
}

// Name implements Policy.
func (*PowerOfTwo) Name() string { return NamePowerOfTwo }

// Choose implements Policy.
func (p *PowerOfTwo) Choose(_ Conn, nodes []NodeLoad) (string, bool) {
	alive := aliveCount(nodes)
	switch alive {
	case 0:
		return "", false
	case 1:
		return nodes[nthAlive(nodes, 0)].ID, true
	}
	i := p.rnd.IntN(alive)
	j := p.rnd.IntN(alive - 1)
	if j >= i {
		j++
	}
	a, b := nodes[nthAlive(nodes, i)], nodes[nthAlive(nodes, j)]
	if better(b, a, func(x, y NodeLoad) bool { return x.busy() < y.busy() }) {
		return b.ID, true
	}
	return a.ID, true
}

// StaticHash is the baseline without feedback: a hash of the client's
// address and port modulo the number of alive nodes, taken in the order
// given (the Scheduler gives them by ID). 001's baseline used the client's
// initial sequence number mod N instead, which L7 cannot see. A client
// address:port always lands on the same node while the node set is the
// same; with few clients, or clients whose ports are consecutive, it
// balances badly, which is what it is here to show.
type StaticHash struct{}

// Name implements Policy.
func (StaticHash) Name() string { return NameStaticHash }

// Choose implements Policy.
func (StaticHash) Choose(c Conn, nodes []NodeLoad) (string, bool) {
	alive := aliveCount(nodes)
	if alive == 0 {
		return "", false
	}
	return nodes[nthAlive(nodes, int(c.Hash()%uint64(alive)))].ID, true
}

func aliveCount(nodes []NodeLoad) int {
	k := 0
	for _, n := range nodes {
		if n.Alive {
			k++
		}
	}
	return k
}

// nthAlive returns the index in nodes of the k-th (from 0) alive node.
func nthAlive(nodes []NodeLoad, k int) int {
	for i, n := range nodes {
		if n.Alive {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return -1
}
