package proxy

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/cache"
	"github.com/mure-dev/mure/internal/hostload"
)

// Defaults of the bypass bound (decision 0055).
const (
	// DefaultBypassMax bounds the requests a busy disk sends to the
	// origin at once.
	DefaultBypassMax = 32
	// bypassTick is how often the bound follows the host's CPU: the CFS
	// quota period, so that one exhausted period is seen in the next.
	bypassTick = 100 * time.Millisecond
)

// relays bounds bypass: the requests for objects held only on a busy disk
// that the proxy sends to the origin (decision 0042). Each relay costs the
// node a copy of the body through user space; past the disk's knee they
// are most of the requests, and relaying them all took the CPU that hits
// from memory need (paper 003's experiment on the testbed: hits' p99 from
// 40 to 500 ms). The bound is on relays in flight, and it follows the
// host's CPU: halved in a step whenever the host's CPU quota ran out since
// the previous one, one more per step when it did not, up to max (AIMD,
// as TCP's window follows loss). A request beyond it is shed: answered at
// once, without the origin.
type relays struct {
	max      int64
	limit    atomic.Int64
	inflight atomic.Int64
	cpuShort func() bool // nil: no CPU signal, the bound stays at max
}

func newRelays(max int, cpuShort func() bool) *relays {
	if max <= 0 {
		max = DefaultBypassMax
	}
	g := &relays{max: int64(max), cpuShort: cpuShort}
	g.limit.Store(g.max)
	return g
}

// enter admits a relay unless the bound's worth are in flight; leave ends
// an admitted one.
func (g *relays) enter() bool {
	for {
		n := g.inflight.Load()
		if n >= g.limit.Load() {
			return false
		}
		if g.inflight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (g *relays) leave() { g.inflight.Add(-1) }

// step moves the bound once: halved when the CPU was short, else one up.
func (g *relays) step() {
	l := g.limit.Load()
	switch {
	case g.cpuShort != nil && g.cpuShort():
		l /= 2
	case l < g.max:
		l++
	}
	g.limit.Store(l)
}

// run steps the bound every tick until ctx ends.
func (g *relays) run(ctx context.Context, tick time.Duration) {
	if g.cpuShort == nil {
		return
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.step()
		}
	}
}

// hostCPUShort reads the host's CPU (its cgroup: the testbed's emulated
// host, a container): short when its tasks were held back by the CPU
// quota for more than 2% of the time since the previous call. nil when
// the host has no quota: there is then no CPU signal to follow, and the
// bound is --proxy-bypass-max alone.
func hostCPUShort() func() bool {
	r := hostload.Open()
	s, err := r.Read()
	if err != nil || s.CPUQuota == 0 {
		return nil
	}
	prev, at := s.CPUThrottledSeconds, time.Now()
	return func() bool {
		s, err := r.Read()
		if err != nil {
			return false
		}
		now := time.Now()
		short := s.CPUThrottledSeconds-prev > 0.02*now.Sub(at).Seconds()
		prev, at = s.CPUThrottledSeconds, now
		return short
	}
}

// shed answers a request for an object held only on the busy disk when
// relays are at their bound: a 503 with Retry-After, or with
// --proxy-bypass-redirect a 307 to the same target at the origin, which
// the client then asks itself. Either costs the node about what a small
// hit does.
func (h *Handler) shed(w http.ResponseWriter, r *http.Request, o *Origin) {
	h.metrics.result(resultShed)
	w.Header().Set("Cache-Status", cache.Status{Detail: "shed"}.String(cacheName))
	if h.redirect {
		w.Header().Set("Location", o.URL.String()+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	w.Header().Set("Retry-After", "1")
	api.Error(w, http.StatusServiceUnavailable, api.CodeUnavailable,
		"the cache is past its capacity: this object is only on its busy disk and its relays to the origin are at their bound (--proxy-bypass-max); retry in a second")
}
