package node

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/hostload"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
)

type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func (n *Node) registerMetrics() {
	n.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	gauge := func(name, help string, f func() float64) {
		n.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "mure", Name: name, Help: help}, f))
	}
	gauge("raft_leader", "1 when this node is the raft leader.", func() float64 {
		if n.cl.IsLeader() {
			return 1
		}
		return 0
	})
	stat := func(k string) func() float64 {
		return func() float64 {
			v, _ := strconv.ParseFloat(n.cl.RaftStats()[k], 64)
			return v
		}
	}
	host := func(f func(hostload.Sample) float64) func() float64 {
		return func() float64 {
			s, _ := n.load.Read()
			return f(s)
		}
	}
	n.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "mure", Name: "host_cpu_seconds_total",
		Help: "CPU time used by this node's host: its cgroup when it runs in one, else the machine."},
		host(func(s hostload.Sample) float64 { return s.CPUSeconds })))
	gauge("host_cpu_quota_cores", "Cores this node's host may use (0: no quota).", host(func(s hostload.Sample) float64 { return s.CPUQuota }))
	gauge("host_memory_bytes", "Memory in use on this node's host (its cgroup, else the machine).", host(func(s hostload.Sample) float64 { return float64(s.MemoryBytes) }))
	gauge("host_memory_limit_bytes", "Memory limit of this node's host (0: none).", host(func(s hostload.Sample) float64 { return float64(s.MemoryLimit) }))
	n.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "mure", Name: "client_connections_refused_total",
		Help: "Client connections answered 503 at once because the port held --max-conns."}, func() float64 { return float64(n.refused.Load()) }))
	gauge("client_connections", "Client connections open on this node's client-facing ports: the client API's and fast lane's (direct and handed over by a front door), --s3's and --proxy's.", func() float64 { return float64(n.openConns()) })
	n.handedOver = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mure", Name: "handover_rejected_total",
		Help: "Relayed connections this node refused (421), by reason: bad_mac, stale, not_dispatcher, malformed."}, []string{"reason"})
	n.reg.MustRegister(n.handedOver)
	gauge("raft_term", "Current raft term.", stat("term"))
	gauge("raft_applied_index", "Last raft index applied to the state machine.", stat("applied_index"))
	gauge("raft_commit_index", "Last raft index known committed.", stat("commit_index"))
	gauge("files_under_replicated", "Live replicated files with fewer valid copies on active nodes than the replication factor.", func() float64 {
		var under int
		n.cl.FSM().Read(func(st *meta.State) { under = st.UnderReplicated(meta.ParseConfig(st.Config()).Replicas) })
		return float64(under)
	})
	gauge("read_lease", "1 when this node may serve reads from its local state.", func() float64 {
		if n.cl.HasReadLease() {
			return 1
		}
		return 0
	})
	n.registerStoreMetrics()
	n.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "mure", Subsystem: "cluster", Name: "members_alive", Help: "Members gossip sees alive."}, func() float64 {
		c := 0
		for _, m := range n.cl.Members() {
			if m.Gossip == cluster.GossipAlive || m.Gossip == cluster.GossipSuspect {
				c++
			}
		}
		return float64(c)
	}))
}

// registerStoreMetrics exports the store's usage and checksum checks
// (mure_store_*).
func (n *Node) registerStoreMetrics() {
	counter := func(name, help string, f func(store.CheckStats) int64) {
		n.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "mure", Subsystem: "store", Name: name, Help: help},
			func() float64 { return float64(f(n.st.Checks())) }))
	}
	counter("verified_total", "Replicas read back and found to match their checksum (first open after a start, or scrub).",
		func(c store.CheckStats) int64 { return c.Verified })
	counter("verified_bytes_total", "Bytes read to verify replicas.", func(c store.CheckStats) int64 { return c.VerifiedBytes })
	counter("corrupt_total", "Replicas found not to match their checksum, moved to quarantine (never served).",
		func(c store.CheckStats) int64 { return c.Corrupt })
	counter("scrub_bytes_total", "Bytes read by the background scrub.", func(c store.CheckStats) int64 { return c.ScrubBytes })
	counter("scrub_passes_total", "Completed scrub passes over every local replica.", func(c store.CheckStats) int64 { return c.ScrubPasses })
	gauge := func(name, help string, f func() float64) {
		n.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "mure", Subsystem: "store", Name: name, Help: help}, f))
	}
	gauge("unverified_blobs", "Replicas found on disk at start and not verified yet.", func() float64 { return float64(n.st.Checks().Unverified) })
	gauge("blobs", "Blobs stored on this node.", func() float64 { b, _ := n.st.Usage(); return float64(b) })
	gauge("bytes", "Bytes of blobs stored on this node.", func() float64 { _, b := n.st.Usage(); return float64(b) })
}

// instrumenter returns the wrapper that counts requests and their latency
// by route pattern (one set of metrics, for every handler it wraps).
func (n *Node) instrumenter() func(http.Handler) http.Handler {
	m := httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mure", Subsystem: "http", Name: "requests_total",
			Help: "Client API requests by route, method and status code."}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "mure", Subsystem: "http", Name: "request_duration_seconds",
			Help: "Client API latency until the handler returned, by route and method.", Buckets: prometheus.ExponentialBuckets(0.0001, 3, 12)},
			[]string{"route", "method"}),
	}
	n.reg.MustRegister(m.requests, m.latency)
	return func(next http.Handler) http.Handler { return m.wrap(n, next) }
}

func (m httpMetrics) wrap(n *Node, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(sw, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		m.requests.WithLabelValues(route, r.Method, strconv.Itoa(sw.code)).Inc()
		took := time.Since(start)
		m.latency.WithLabelValues(route, r.Method).Observe(took.Seconds())
		n.mon.observe(took, sw.code)
	})
}

// statusWriter records the status code and keeps the ResponseWriter's
// optional interfaces that matter (sendfile through ReadFrom, Flush,
// Hijack).
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote && code >= 200 {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	s.wrote = true
	return io.Copy(s.ResponseWriter, r) // http.response implements ReaderFrom: sendfile
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(s.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
