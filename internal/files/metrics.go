package files

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the file service's Prometheus series (mure_files_*).
type Metrics struct {
	localReads, writes, deletes, invalidations, leaseWaits, releases, resumed prometheus.Counter
	lostReplicas, dropped, readLeaseWaits                                     prometheus.Counter
	bytesIn, bytesOut, replicaBytesIn, replicaBytesOut                        prometheus.Counter
	replicationBytes, throttleWait                                            prometheus.Counter
	replicationRate                                                           prometheus.Gauge
	redirects, forwarded, forwardFailed                                       *prometheus.CounterVec
	backlog                                                                   prometheus.Gauge
	hotHeld                                                                   prometheus.Gauge
	hotAdded, hotDropped                                                      prometheus.Counter
}

// NewMetrics creates the series and registers them with reg (nil: not
// registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "mure", Subsystem: "files", Name: name, Help: help})
	}
	m := &Metrics{
		localReads:    c("local_reads_total", "Reads served from this node's replica."),
		writes:        c("writes_total", "Writes committed by this node."),
		deletes:       c("deletes_total", "Deletes committed by this node."),
		invalidations: c("invalidations_total", "Invalidations received from the leader."),
		leaseWaits:    c("lease_waits_total", "Invalidations that had to wait for a node's read lease to expire."),
		readLeaseWaits: c("read_lease_waits_total",
			"Reads that found this node without a read lease and waited for one (LeaseWait): reads another node sent here, and clients' reads it had nowhere else to send."),
		releases:        c("releases_total", "Write rights released by this node (replication resumed)."),
		resumed:         c("replicas_resumed_total", "Replicas this node brought up to date."),
		lostReplicas:    c("replicas_lost_total", "Replicas of current versions found corrupt (quarantined) or missing on this node."),
		dropped:         c("replicas_dropped_total", "Lost replicas removed from the catalogue's valid set (then re-replicated)."),
		bytesIn:         c("written_bytes_total", "Bytes of file content written by clients to this node."),
		bytesOut:        c("read_bytes_total", "Bytes of file content served to clients by this node."),
		replicaBytesIn:  c("replica_in_bytes_total", "Bytes received from peers (standby copies and resumption)."),
		replicaBytesOut: c("replica_out_bytes_total", "Bytes sent to peers (standby copies and resumption)."),
		replicationBytes: c("replication_bytes_total",
			"Bytes fetched from peers to copy replicas (re-replication, repair, resumption), counted as they arrive; capped by replication.rate."),
		throttleWait: c("replication_throttle_seconds_total",
			"Time replica fetches waited for the replication.rate cap, summed over concurrent fetches."),
		replicationRate: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "mure", Subsystem: "files", Name: "replication_rate_bytes",
			Help: "The replication.rate cap in force on this node, bytes per second (0: no cap)."}),
		redirects: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mure", Subsystem: "files", Name: "redirects_total",
			Help: "Requests redirected to another node, by method."}, []string{"method"}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mure", Subsystem: "files", Name: "forwarded_total",
			Help: "Requests this node forwarded to another node (reads streamed from a holder of a valid copy, writes handed to the holder of the write right), by operation."}, []string{"op"}),
		forwardFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mure", Subsystem: "files", Name: "forward_failures_total",
			Help: "Forwarded requests that failed because the other node could not be reached or stopped answering, by operation."}, []string{"op"}),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "mure", Subsystem: "files", Name: "replication_backlog_files",
			Help: "Files this node should hold but whose current version it does not have yet."}),
		hotHeld: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "mure", Subsystem: "files", Name: "hot_replicas",
			Help: "Hot copies this node holds: extra copies of files read here often (hot.reads), beyond the replication count."}),
		hotAdded:   c("hot_replicas_added_total", "Hot copies this node fetched and made valid."),
		hotDropped: c("hot_replicas_dropped_total", "Hot copies this node dropped once their file cooled (hot.cool)."),
	}
	if reg != nil {
		reg.MustRegister(m.localReads, m.writes, m.deletes, m.invalidations, m.leaseWaits, m.releases, m.resumed, m.lostReplicas, m.dropped, m.readLeaseWaits,
			m.bytesIn, m.bytesOut, m.replicaBytesIn, m.replicaBytesOut,
			m.replicationBytes, m.throttleWait, m.replicationRate, m.redirects, m.forwarded, m.forwardFailed, m.backlog,
			m.hotHeld, m.hotAdded, m.hotDropped)
	}
	return m
}

// Redirected counts a request a face redirected to another node.
func (m *Metrics) Redirected(method string) { m.redirects.WithLabelValues(method).Inc() }

// Sent counts n bytes of file content a face sent to a client.
func (m *Metrics) Sent(n int64) { m.bytesOut.Add(float64(n)) }
