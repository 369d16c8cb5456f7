package proxy

import (
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
	resultRefused     = "refused"
	resultError       = "error"
	resultPeer        = "peer"
)

// metrics are the proxy's collectors (mure_cache_*).
type metrics struct {
	requests  *prometheus.CounterVec
	bytes     *prometheus.CounterVec
	fetches   prometheus.Counter
	collapsed prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mure", Subsystem: "cache", Name: "requests_total",
			Help: "Requests to the caching proxy by result: hit, stale (served stale), revalidated (304 from the origin), miss, collapsed (waited for another request's fetch), bypass (not cacheable), refused (unknown Host), error, peer (relayed from the key's owner node)."}, []string{"result"}),
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
	for _, c := range []prometheus.Collector{m.requests, m.bytes, m.fetches, m.collapsed,
		gauge("memory_bytes", "Bytes held by the memory tier.", func(s tier.Stats) float64 { return float64(s.MemoryBytes) }),
		gauge("disk_bytes", "Bytes held by the disk tier.", func(s tier.Stats) float64 { return float64(s.DiskBytes) }),
		gauge("objects", "Objects stored in any tier.", func(s tier.Stats) float64 { return float64(s.Objects) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
