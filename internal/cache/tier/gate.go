package tier

import (
	"sync"
	"time"
)

// gate admits the disk tier's operations while the disk keeps up: it
// counts the reads and writes in flight and knows when the oldest began.
// Past its queue bound, or when the oldest operation has run longer than
// the latency target, it refuses: a request the memory tier cannot answer
// then goes to the origin instead of queuing behind the disk (paper 003's
// cache slowed every client once its disk was saturated). The signal is
// the age of the oldest operation still in flight, not a moving average,
// so that it clears by itself once the disk has caught up.
type gate struct {
	queue   int
	latency time.Duration
	off     bool

	mu       sync.Mutex
	inflight []op // in the order they began
	seq      uint64
}

type op struct {
	id    uint64
	start time.Time
}

func newGate(queue int, latency time.Duration, off bool) *gate {
	return &gate{queue: queue, latency: latency, off: off}
}

// busy reports whether the disk is past its capacity now.
func (g *gate) busy() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.busyLocked(time.Now())
}

func (g *gate) busyLocked(now time.Time) bool {
	if g.off || len(g.inflight) == 0 {
		return false
	}
	return len(g.inflight) >= g.queue || now.Sub(g.inflight[0].start) > g.latency
}

// enter begins an operation unless the disk is busy (ok false); must
// admits it even then (a write already committed to). The returned
// function ends it.
func (g *gate) enter(must bool) (leave func(), ok bool) {
	now := time.Now()
	g.mu.Lock()
	if !must && g.busyLocked(now) {
		g.mu.Unlock()
		return nil, false
	}
	g.seq++
	id := g.seq
	g.inflight = append(g.inflight, op{id: id, start: now})
	g.mu.Unlock()
	return func() { g.leave(id) }, true
}

func (g *gate) leave(id uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, o := range g.inflight {
		if o.id == id {
			g.inflight = append(g.inflight[:i], g.inflight[i+1:]...)
			return
		}
	}
}

// load is the gate's state for Stats: operations in flight and the age
// of the oldest.
func (g *gate) load() (int, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.inflight) == 0 {
		return 0, 0
	}
	return len(g.inflight), time.Since(g.inflight[0].start)
}
