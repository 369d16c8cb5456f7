package proxy

import (
	"context"
	"net/http"
	rtmetrics "runtime/metrics"
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
	// NoRelays as Config.BypassMax relays nothing while the disk is busy:
	// what memory does not hold is shed (--proxy-bypass-max 0; decision
	// 0069).
	NoRelays = -1
	// bypassTick is how often the bound follows the host's CPU: the CFS
	// quota period, so that one exhausted period is seen in the next.
	bypassTick = 100 * time.Millisecond
)

// relays bounds bypass: the requests for objects held only on a busy disk
// that the proxy sends to the origin (decision 0042), and the misses
// while the disk is busy, which it keeps in memory only. Each relay costs the
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
	switch {
	case max == 0:
		max = DefaultBypassMax
	case max < 0:
		max = 0 // NoRelays
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

// defaultCPUShort is the signal the bypass bound follows by default: the
// CPU ran short since the previous call when the host's CPU quota held its
// tasks back (throttledShort), or when goroutines waited for a CPU
// (schedShort) — the latter also when the machine, not a quota, is what
// is short, as on a host shared with other work.
func defaultCPUShort() func() bool {
	throttled, sched := throttledShort(), schedShort(schedSlow)
	return func() bool {
		t := throttled != nil && throttled() // both read: each keeps its own interval
		return sched() || t
	}
}

// schedSlow is the scheduling latency beyond which a goroutine's wait
// counts as the CPU being short: well above a free CPU's (µs), well
// below the tens of ms a hit waits behind an exhausted quota.
const schedSlow = 5 * time.Millisecond

// schedShort reads the Go scheduler's latencies (runtime/metrics
// /sched/latencies: how long runnable goroutines waited for a CPU): short
// when more than 1% of the waits since the previous call were longer
// than slow.
func schedShort(slow time.Duration) func() bool {
	s := []rtmetrics.Sample{{Name: "/sched/latencies:seconds"}}
	var prev []uint64
	return func() bool {
		rtmetrics.Read(s)
		if s[0].Value.Kind() != rtmetrics.KindFloat64Histogram {
			return false
		}
		h := s[0].Value.Float64Histogram()
		var all, late uint64
		for i, c := range h.Counts {
			if i < len(prev) {
				c -= prev[i]
			}
			all += c
			if h.Buckets[i] >= slow.Seconds() {
				late += c
			}
		}
		prev = append(prev[:0], h.Counts...)
		return late*100 > all
	}
}

// throttledShort reads the host's CPU (its cgroup: the testbed's emulated
// host, a container): short when its tasks were held back by the CPU
// quota for more than 2% of the time since the previous call. nil when
// the host has no quota.
func throttledShort() func() bool {
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

// shed answers a request for an object held only on the busy disk, or a
// miss while the disk is busy, when relays are at their bound: a 503 with Retry-After, or with
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
