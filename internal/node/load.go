package node

import (
	"runtime"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/hostload"
)

// loadSampler turns the host's counters into the figures a node gossips:
// CPU use since the previous sample, as a fraction of the host's quota.
type loadSampler struct {
	r     *hostload.Reader
	conns func() int
	// sim, when set, names a file of simulated figures (tests only);
	// id and dataDir are this node's, for it.
	sim, id, dataDir string

	mu     sync.Mutex
	prev   hostload.Sample
	prevAt time.Time
}

func (s *loadSampler) take() cluster.Load {
	l := s.measure()
	if s.sim != "" {
		l = simulate(l, s.sim, s.id, s.dataDir)
	}
	return l
}

func (s *loadSampler) measure() cluster.Load {
	now := time.Now()
	cur, err := s.r.Read()
	l := cluster.Load{Connections: s.conns(), RunQueue: s.r.RunQueue(), At: now.UnixMilli()}
	if err != nil {
		return l
	}
	l.FreeMemory = s.r.FreeMemory(cur)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.prevAt.IsZero() {
		cores := cur.CPUQuota
		if cores <= 0 {
			cores = float64(runtime.NumCPU())
		}
		if dt := now.Sub(s.prevAt).Seconds(); dt > 0 {
			l.CPU = max(0, cur.CPUSeconds-s.prev.CPUSeconds) / dt / cores
		}
	}
	s.prev, s.prevAt = cur, now
	return l
}
