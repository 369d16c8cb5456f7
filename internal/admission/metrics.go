package admission

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	queueFull prometheus.Counter
	timeout   prometheus.Counter
	wait      prometheus.Histogram
}

// newMetrics builds the Limiter's metrics and registers them with reg
// unless reg is nil. The gauges read the Limiter's own state when
// scraped, so the request path only touches the counters and the
// histogram (atomic adds, no allocation).
func newMetrics(l *Limiter, reg prometheus.Registerer) metrics {
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "mure", Subsystem: l.cfg.Subsystem, Name: "in_flight",
		Help: "Client requests executing (at most the admission limit)."},
		func() float64 { n, _ := l.Stats(); return float64(n) })
	queued := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "mure", Subsystem: l.cfg.Subsystem, Name: "queued",
		Help: "Client requests waiting for an admission slot."},
		func() float64 { _, n := l.Stats(); return float64(n) })
	rejected := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mure", Subsystem: l.cfg.Subsystem, Name: "rejected_total",
		Help: "Client requests answered 503 overloaded: queue_full (no waiting place) or timeout (waited QueueTimeout)."},
		[]string{"reason"})
	wait := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "mure", Subsystem: l.cfg.Subsystem, Name: "wait_seconds",
		Help:    "Time admitted client requests waited for a slot (0 when one was free).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 3, 12)})
	m := metrics{
		queueFull: rejected.WithLabelValues("queue_full"),
		timeout:   rejected.WithLabelValues("timeout"),
		wait:      wait,
	}
	if reg != nil {
		reg.MustRegister(inFlight, queued, rejected, wait)
	}
	return m
}
