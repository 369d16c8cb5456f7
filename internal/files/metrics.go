package files

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the file service's Prometheus series (mure_files_*).
type Metrics struct {
	localReads, writes, deletes, invalidations, leaseWaits, releases, resumed prometheus.Counter
	bytesIn, bytesOut, replicaBytesIn, replicaBytesOut                        prometheus.Counter
	redirects                                                                 *prometheus.CounterVec
	backlog                                                                   prometheus.Gauge
}

// NewMetrics creates the series and registers them with reg (nil: not
// registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "mure", Subsystem: "files", Name: name, Help: help})
	}
	m := &Metrics{
		localReads:      c("local_reads_total", "Reads served from this node's replica."),
		writes:          c("writes_total", "Writes committed by this node."),
		deletes:         c("deletes_total", "Deletes committed by this node."),
		invalidations:   c("invalidations_total", "Invalidations received from the leader."),
		leaseWaits:      c("lease_waits_total", "Invalidations that had to wait for a node's read lease to expire."),
		releases:        c("releases_total", "Write rights released by this node (replication resumed)."),
		resumed:         c("replicas_resumed_total", "Replicas this node brought up to date."),
		bytesIn:         c("written_bytes_total", "Bytes of file content written by clients to this node."),
		bytesOut:        c("read_bytes_total", "Bytes of file content served to clients by this node."),
		replicaBytesIn:  c("replica_in_bytes_total", "Bytes received from peers (standby copies and resumption)."),
		replicaBytesOut: c("replica_out_bytes_total", "Bytes sent to peers (standby copies and resumption)."),
		redirects: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mure", Subsystem: "files", Name: "redirects_total",
			Help: "Requests redirected to another node, by method."}, []string{"method"}),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "mure", Subsystem: "files", Name: "replication_backlog_files",
			Help: "Files this node should hold but whose current version it does not have yet."}),
	}
	if reg != nil {
		reg.MustRegister(m.localReads, m.writes, m.deletes, m.invalidations, m.leaseWaits, m.releases, m.resumed,
			m.bytesIn, m.bytesOut, m.replicaBytesIn, m.replicaBytesOut, m.redirects, m.backlog)
	}
	return m
}
