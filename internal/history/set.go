package history

import (
	"slices"
	"sync"
)

// DefaultMaxNodes bounds the nodes a Set keeps series for.
const DefaultMaxNodes = 64

// Set holds the series of every node this node knows of, bounded: beyond
// its capacity, the series updated least recently is dropped. It is safe
// for concurrent use.
type Set struct {
	mu     sync.Mutex
	max    int
	series map[string]*entry
	clock  int64 // counts updates, orders eviction
}

type entry struct {
	s    *Series
	used int64
}

// NewSet returns an empty set keeping up to maxNodes series (0:
// DefaultMaxNodes).
func NewSet(maxNodes int) *Set {
	if maxNodes <= 0 {
		maxNodes = DefaultMaxNodes
	}
	return &Set{max: maxNodes, series: map[string]*entry{}}
}

// Series returns the node's series, made on first use, and marks it used.
func (s *Set) Series(node string) *Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock++
	if e, ok := s.series[node]; ok {
		e.used = s.clock
		return e.s
	}
	if len(s.series) >= s.max {
		var oldest string
		for id, e := range s.series {
			if oldest == "" || e.used < s.series[oldest].used {
				oldest = id
			}
		}
		delete(s.series, oldest)
	}
	e := &entry{s: NewSeries(), used: s.clock}
	s.series[node] = e
	return e.s
}

// Lookup returns the node's series without making one.
func (s *Set) Lookup(node string) (*Series, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.series[node]
	if !ok {
		return nil, false
	}
	return e.s, true
}

// Nodes returns the IDs of the nodes held, sorted.
func (s *Set) Nodes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.series))
	for id := range s.series {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Dump returns, for each node held (or only those named), its points
// newer than since (fine and coarse alike).
func (s *Set) Dump(since int64, nodes ...string) Dump {
	if len(nodes) == 0 {
		nodes = s.Nodes()
	}
	d := Dump{Nodes: map[string]NodeDump{}}
	for _, id := range nodes {
		if se, ok := s.Lookup(id); ok {
			fine, coarse := se.Since(since, since)
			d.Nodes[id] = NodeDump{Fine: fine, Coarse: coarse}
		}
	}
	return d
}

// Replace puts se in place of the node's series (a node restarted takes
// its own past back from a peer, then its present).
func (s *Set) Replace(node string, se *Series) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock++
	s.series[node] = &entry{s: se, used: s.clock}
}
