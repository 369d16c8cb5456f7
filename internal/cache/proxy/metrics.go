package proxy

import (
	"maps"
	"sync"

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
	resultRefused     = "refused"
	resultError       = "error"
	resultPeer        = "peer"
)

// metrics are the proxy's collectors (mure_cache_*), and the same counts
// kept for /status and the dashboard.
type metrics struct {
	requests  *prometheus.CounterVec
	bytes     *prometheus.CounterVec
	fetches   prometheus.Counter
	collapsed prometheus.Counter

	mu     sync.Mutex
	counts Counts
}

// Counts are the proxy's running totals since the node started.
type Counts struct {
	// Requests by result (hit, stale, revalidated, miss, collapsed,
	// bypass, overload, refused, error, peer).
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

func (m *metrics) result(r string) {
	m.requests.WithLabelValues(r).Inc()
	m.mu.Lock()
	m.counts.Requests[r]++
	m.mu.Unlock()
}

func (m *metrics) served(from string, n int64) {
	m.bytes.WithLabelValues(from).Add(float64(n))
	m.mu.Lock()
	m.counts.Bytes[from] += n
	m.mu.Unlock()
}

// servedTier splits the bytes served from the cache by tier.
func (m *metrics) servedTier(disk bool, n int64) {
	m.mu.Lock()
	if disk {
		m.counts.CacheDisk += n
	} else {
		m.counts.CacheMemory += n
	}
	m.mu.Unlock()
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
	defer m.mu.Unlock()
	c := m.counts
	c.Requests, c.Bytes = maps.Clone(c.Requests), maps.Clone(c.Bytes)
	return c
}

func newMetrics() *metrics {
	return &metrics{
		counts: Counts{Requests: map[string]int64{}, Bytes: map[string]int64{}},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mure", Subsystem: "cache", Name: "requests_total",
			Help: "Requests to the caching proxy by result: hit, stale (served stale), revalidated (304 from the origin), miss, collapsed (waited for another request's fetch), bypass (not cacheable), overload (stored only on a busy disk: sent to the origin), refused (unknown Host), error, peer (relayed from the key's owner node)."}, []string{"result"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mure", Subsystem: "cache", Name: "served_bytes_total",
			Help: "Body bytes the proxy sent to clients, from the cache or from the origin."}, []string{"from"}),
		fetches: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "mure", Subsystem: "cache", Name: "origin_fetches_total",
			Help: "Requests the proxy sent to origins (misses, validations, unsafe methods, background revalidations)."}),
		collapsed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "mure", Subsystem: "cache", Name: "collapsed_waits_total",
			Help: "Misses that waited for a concurrent fetch of the same object instead of fetching it."}),
	}
}

// register adds the collectors and the tiers' gauges to reg.
func (m *metrics) register(reg prometheus.Registerer, tiers *tier.Tiers) error {
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
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
