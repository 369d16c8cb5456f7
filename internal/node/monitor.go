package node

import (
	"math"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/dispatch"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/history"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/monitor"
)

// monitorService builds the monitor (history, /history, the dashboard):
// node gives it this node's readings and the peer port's client.
func (n *Node) monitorService() *monitor.Service {
	n.mon = &monitorReader{n: n}
	return monitor.New(monitor.Config{
		Read:     n.mon.read,
		Peers:    &http.Client{Transport: peerTransport{n}, Timeout: 5 * time.Second},
		UI:       n.uiConfig(),
		Extra:    n.monitorExtra,
		Sessions: n.monitorSessions,
	})
}

// peerTransport sends requests over the peer port, which is opened after
// the services are built.
type peerTransport struct{ n *Node }

func (p peerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return p.n.mux.HTTPTransport().RoundTrip(r)
}

// monitorReader reads this node's figures for its history.
type monitorReader struct {
	n        *Node
	requests history.Requests

	mu        sync.Mutex
	prevFront uint64
	prevRefus uint64 // the front's refusals (503s)
	prevAt    time.Time

	files     FilesInfo // the catalogue's figures, as last counted
	filesNext time.Time // when to count them again

	// the caching proxy's requests and those the cache answered, at the
	// previous reading (the hit ratio is over the second between)
	prevCacheAll, prevCached int64
	hasCache                 bool
}

// catalogue returns the file service's figures, counted again only when
// the last count is old enough: counting the under-replicated files walks
// the whole catalogue under the state machine's read lock, so a count that
// took d is not repeated for 20·d (at most 5% of the time; a second with a
// small catalogue).
func (m *monitorReader) catalogue(now time.Time) (FilesInfo, bool) {
	if now.Before(m.filesNext) {
		return m.files, true
	}
	start := time.Now()
	f, ok := m.n.files.Status().(FilesInfo)
	if !ok {
		return f, false
	}
	m.files, m.filesNext = f, now.Add(max(time.Second-50*time.Millisecond, 20*time.Since(start)))
	return f, true
}

// observe records one answered client request (instrument).
func (m *monitorReader) observe(d time.Duration, status int) {
	if m != nil {
		m.requests.Observe(d, status)
	}
}

// read takes a reading: counters (CPU time per core of quota, disk and
// network bytes, front-door decisions) as running totals, the rest as
// they are now.
func (m *monitorReader) read() history.Reading {
	n := m.n
	now := time.Now()
	r := history.Reading{At: now}
	for i := range r.V {
		r.V[i] = math.NaN()
	}
	if s, err := n.load.Read(); err == nil {
		cores := s.CPUQuota
		if cores <= 0 {
			cores = float64(runtime.NumCPU())
		}
		r.V[history.CPU] = s.CPUSeconds / cores
		r.V[history.Mem] = float64(s.MemoryBytes - s.PageCacheBytes)
		if s.MemoryLimit > 0 {
			r.V[history.MemLimit] = float64(s.MemoryLimit)
		}
	}
	for _, mb := range n.cl.Members() {
		if mb.ID == n.ID() && mb.Load != nil {
			r.V[history.Pressure] = mb.Load.RunQueue
		}
	}
	io := n.load.ReadIO()
	r.V[history.DiskRead], r.V[history.DiskWrite] = float64(io.DiskRead), float64(io.DiskWrite)
	r.V[history.NetRx], r.V[history.NetTx] = float64(io.NetRx), float64(io.NetTx)
	r.V[history.Conns] = float64(n.openConns())

	// Requests: those net/http answered (with their latency) and the
	// plain reads the front answered or refused itself (counted only;
	// refusals as errors too, as net/http's 503s are).
	sec := m.requests.Take(now)
	st := n.api.Status().(APIStatus)
	front, refused := st.FrontServed, st.FrontRefused
	m.mu.Lock()
	if dt := now.Sub(m.prevAt).Seconds(); !m.prevAt.IsZero() && dt > 0 && front >= m.prevFront && refused >= m.prevRefus {
		sec.Rate += float64(front-m.prevFront+refused-m.prevRefus) / dt
		sec.Errors += float64(refused-m.prevRefus) / dt
	}
	m.prevFront, m.prevRefus, m.prevAt = front, refused, now
	m.mu.Unlock()
	r.V[history.RequestRate], r.V[history.ErrorRate] = sec.Rate, sec.Errors
	r.V[history.P50], r.V[history.P99] = sec.P50, sec.P99

	_, bytes := n.st.Usage()
	r.V[history.DiskUsed] = float64(bytes)
	if free, _, err := n.st.DiskFree(); err == nil {
		r.V[history.DiskFree] = float64(free)
	}
	if f, ok := m.catalogue(now); ok {
		r.V[history.Files] = float64(f.Live)
		r.V[history.UnderReplicated] = float64(f.UnderReplicated)
		r.V[history.Healing] = float64(f.Backlog)
		r.V[history.Pending] = float64(f.Pending)
	}
	checks := n.st.Checks()
	r.V[history.Corrupt], r.V[history.Scrub] = float64(checks.Corrupt), float64(checks.ScrubBytes)
	if n.door != nil {
		if st, ok := n.door.Status().(frontdoor.Status); ok {
			var total uint64
			for _, c := range st.Decisions {
				total += c
			}
			r.V[history.Decisions] = float64(total)
		}
	}
	m.readCache(&r)
	m.readSessions(&r)
	return r
}

// Monitor returns the node's monitor (its history; tests).
func (n *Node) Monitor() *monitor.Service { return n.monitor }

// monitorExtra is what the dashboard shows besides the history: the
// cluster's dispatch policy, this node's front door (its decisions by
// policy) and its caching proxy (counts, tiers, probe), when it has them.
func (n *Node) monitorExtra() map[string]any {
	var policy string
	n.cl.FSM().Read(func(st *meta.State) { policy = dispatch.PolicySetting(st.Config()) })
	extra := map[string]any{"policy": policy}
	if n.door != nil {
		extra["front"] = n.door.Status()
	}
	if n.proxy != nil {
		extra["cache"] = n.proxy.Status()
	}
	return extra
}
