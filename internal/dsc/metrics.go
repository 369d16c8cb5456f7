package dsc

import "github.com/prometheus/client_golang/prometheus"

var (
	descMaster = prometheus.NewDesc("mure_single_address_master",
		"1 while this node places SYNs (the SYN master).", nil, nil)
	descSYNs = prometheus.NewDesc("mure_single_address_syns_total",
		"Client SYNs by what happened to them here: tapped and retransmitted (placed by this master; "+
			"retransmitted: by the table), forwarded (sent to another node, user path), injected (taken by this node), "+
			"refused (datagrams refused: key, time, master), unplaced, errors, stale (waited over 1 s in a paused master's tap), "+
			"expired (seen by the kernel path without a lease: every client SYN on a member).", []string{"event"}, nil)
	descRebuilds = prometheus.NewDesc("mure_single_address_rebuilds_total",
		"SYN table rebuilds from the nodes' half-open connections (one per master change).", nil, nil)
	descRebuilt = prometheus.NewDesc("mure_single_address_rebuilt_total",
		"Half-open connections those rebuilds found.", nil, nil)
	descUnreported = prometheus.NewDesc("mure_single_address_unreported_total",
		"Nodes that did not answer a rebuild's query in time.", nil, nil)
)

// Collector exposes an agent's counters as Prometheus metrics.
func Collector(stats func() Stats) prometheus.Collector { return collector(stats) }

type collector func() Stats

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMaster, descSYNs, descRebuilds, descRebuilt, descUnreported} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c()
	master := 0.0
	if s.Master {
		master = 1
	}
	ch <- prometheus.MustNewConstMetric(descMaster, prometheus.GaugeValue, master)
	for event, v := range map[string]uint64{
		"tapped": s.Tapped, "retransmitted": s.Retransmitted, "forwarded": s.Forwarded, "injected": s.Injected,
		"refused": s.Refused, "unplaced": s.Unplaced, "errors": s.Errors, "stale": s.Stale, "expired": s.Expired,
	} {
		ch <- prometheus.MustNewConstMetric(descSYNs, prometheus.CounterValue, float64(v), event)
	}
	ch <- prometheus.MustNewConstMetric(descRebuilds, prometheus.CounterValue, float64(s.Rebuilds))
	ch <- prometheus.MustNewConstMetric(descRebuilt, prometheus.CounterValue, float64(s.Rebuilt))
	ch <- prometheus.MustNewConstMetric(descUnreported, prometheus.CounterValue, float64(s.Unreported))
}
