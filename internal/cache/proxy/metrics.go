package proxy

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mure-dev/mure/internal/cache/tier"
)

// Results counted by mure_cache_requests_total.
const (
	resultHit         = "hit"
	resultStale       = "stale"
	resultRevalidated = "revalidated"
	resultMiss        = "miss"
	resultCollapsed   = "collapsed"
	resultBypass      = "bypass"
	resultOverload    = "overload"
	resultShed        = "shed"
	resultRefused     = "refused"
	resultError       = "error"
	resultPeer        = "peer"
)

// metrics are the proxy's collectors (mure_cache_*), and the same counts
// kept for /status and the dashboard. Each result's and source's counter
// is resolved once: a hit costs two atomic adds per figure, no label
// lookup and no lock.
type metrics struct {
	requests  *prometheus.CounterVec
	bytes     *prometheus.CounterVec
	fetches   prometheus.Counter
	collapsed prometheus.Counter

	byResult map[string]*tally // read-only after newMetrics
	byFrom   map[string]*tally

	fromMemory, fromDisk atomic.Int64

	mu     sync.Mutex // the rest of counts
	counts Counts
}

// tally is one labelled series and its running total for /status.
type tally struct {
	c prometheus.Counter
	n atomic.Int64
}

func (t *tally) add(n int64) {
	t.c.Add(float64(n))
	t.n.Add(n)
}

// Counts are the proxy's running totals since the node started.
type Counts struct {
	// Requests by result (hit, stale, revalidated, miss, collapsed,
	// bypass, overload, shed, refused, error, peer).
	Requests map[string]int64 `json:"requests"`
	// Bytes of bodies sent to clients, by where they came from (cache,
	// origin, peer).
	Bytes map[string]int64 `json:"bytes"`
	// CacheMemory and CacheDisk split the cache's bytes by the tier
	// that held the object when it was read.
	CacheMemory   int64 `json:"cache_memory_bytes"`
	CacheDisk     int64 `json:"cache_disk_bytes"`
	OriginFetches int64 `json:"origin_fetches"`
	CollapsedWait int64 `json:"collapsed_waits"`
}

func (m *metrics) result(r string) { m.byResult[r].add(1) }

func (m *metrics) served(from string, n int64) { m.byFrom[from].add(n) }

// servedTier splits the bytes served from the cache by tier.
func (m *metrics) servedTier(disk bool, n int64) {
	if disk {
		m.fromDisk.Add(n)
	} else {
		m.fromMemory.Add(n)
	}
}

func (m *metrics) originFetch() {
	m.fetches.Inc()
	m.mu.Lock()
	m.counts.OriginFetches++
	m.mu.Unlock()
}

func (m *metrics) collapsedWait() {
	m.collapsed.Inc()
	m.mu.Lock()
	m.counts.CollapsedWait++
	m.mu.Unlock()
}

// snapshot copies the counts.
func (m *metrics) snapshot() Counts {
	m.mu.Lock()
	c := m.counts
	m.mu.Unlock()
	c.Requests, c.Bytes = map[string]int64{}, map[string]int64{}
	c.CacheMemory, c.CacheDisk = m.fromMemory.Load(), m.fromDisk.Load()
	for r, t := range m.byResult {
		if n := t.n.Load(); n > 0 {
			c.Requests[r] = n
		}
	}
	for f, t := range m.byFrom {
		if n := t.n.Load(); n > 0 {
			c.Bytes[f] = n
		}
	}
	return c
}

func newMetrics() *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mure", Subsystem: "cache", Name: "requests_total",
			Help: "Requests to the caching proxy by result: hit, stale (served stale), revalidated (304 from the origin), miss, collapsed (waited for another request's fetch), bypass (not cacheable), overload (stored only on a busy disk: sent to the origin), shed (stored only on a busy disk, relays at their bound: answered 503 or 307 to the origin), refused (unknown Host), error, peer (relayed from the key's owner node)."}, []string{"result"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mure", Subsystem: "cache", Name: "served_bytes_total",
			Help: "Body bytes the proxy sent to clients, from the cache or from the origin."}, []string{"from"}),
		fetches: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "mure", Subsystem: "cache", Name: "origin_fetches_total",
			Help: "Requests the proxy sent to origins (misses, validations, unsafe methods, background revalidations)."}),
		collapsed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "mure", Subsystem: "cache", Name: "collapsed_waits_total",
			Help: "Misses that waited for a concurrent fetch of the same object instead of fetching it."}),
		byResult: map[string]*tally{}, byFrom: map[string]*tally{},
	}
	for _, r := range []string{resultHit, resultStale, resultRevalidated, resultMiss, resultCollapsed,
		resultBypass, resultOverload, resultShed, resultRefused, resultError, resultPeer} {
		m.byResult[r] = &tally{c: m.requests.WithLabelValues(r)}
	}
	for _, f := range []string{"cache", "origin", "peer"} {
		m.byFrom[f] = &tally{c: m.bytes.WithLabelValues(f)}
	}
	return m
}

// register adds the collectors and the tiers' gauges to reg.
func (m *metrics) register(reg prometheus.Registerer, tiers *tier.Tiers, rl *relays) error {
	gauge := func(name, help string, f func(tier.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "mure", Subsystem: "cache", Name: name, Help: help},
			func() float64 { return f(tiers.Stats()) })
	}
	counter := func(name, help string, f func(tier.Stats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "mure", Subsystem: "cache", Name: name, Help: help},
			func() float64 { return f(tiers.Stats()) })
	}
	for _, c := range []prometheus.Collector{m.requests, m.bytes, m.fetches, m.collapsed,
		gauge("memory_bytes", "Bytes held by the memory tier.", func(s tier.Stats) float64 { return float64(s.MemoryBytes) }),
		gauge("disk_bytes", "Bytes held by the disk tier.", func(s tier.Stats) float64 { return float64(s.DiskBytes) }),
		gauge("objects", "Objects stored in any tier.", func(s tier.Stats) float64 { return float64(s.Objects) }),
		gauge("disk_inflight", "Disk tier reads and writes in flight.", func(s tier.Stats) float64 { return float64(s.DiskInflight) }),
		counter("disk_refused_total", "Disk tier reads refused because the disk was busy (the request went to the origin).", func(s tier.Stats) float64 { return float64(s.DiskRefused) }),
		counter("disk_skipped_total", "Objects kept in memory only because the disk was busy.", func(s tier.Stats) float64 { return float64(s.DiskSkipped) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "mure", Subsystem: "cache", Name: "bypass_inflight",
			Help: "Requests relayed to the origin now while the disk is busy: those for objects held only on disk, and misses."}, func() float64 { return float64(rl.inflight.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "mure", Subsystem: "cache", Name: "bypass_limit",
			Help: "The bound on those relays now (--proxy-bypass-max, halved while the CPU runs short); beyond it requests are shed."}, func() float64 { return float64(rl.limit.Load()) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
