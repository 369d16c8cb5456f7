package frontdoor

import (
	"maps"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mure-dev/mure/internal/dispatch"
)

// Status is the front door's part of a node's /status.
type Status struct {
	// Holder is the dispatcher role's holder in this node's view, How the
	// rule that chose it (cluster.Dispatch*).
	Holder string `json:"holder"`
	How    string `json:"how"`
	// Active: this node holds the role and its front door is open at Addr.
	Active bool      `json:"active"`
	Addr   string    `json:"addr"`
	Since  time.Time `json:"since,omitzero"`
	// BindError is why the holder could not open its front door yet.
	BindError string `json:"bind_error,omitempty"`
	Mode      string `json:"mode"`
	Policy    string `json:"policy"`
	// Decisions counts the connections each policy, the affinity table and
	// "none" (no node) accounted for, since this node started.
	Decisions map[string]uint64 `json:"decisions"`
	// Nodes are the figures the policy sees (with its own assignments);
	// kept up to date only while this node holds the role.
	Nodes    []dispatch.NodeLoad `json:"nodes"`
	Open     int                 `json:"open_connections"`
	Accepted int64               `json:"accepted"`
	Proxied  int64               `json:"proxied,omitempty"`
	// Local counts connections (proxy mode) the policy sent to this node
	// itself, served without a relay.
	Local     int64            `json:"local,omitempty"`
	Broken    int64            `json:"broken,omitempty"`
	Rejected  map[string]int64 `json:"rejected,omitempty"`
	Takeovers int64            `json:"takeovers"`
}

// Status returns the front door's state.
func (d *Door) Status() Status {
	d.mu.Lock()
	s := Status{Holder: d.holder, How: d.how, Active: d.active, Since: d.since, BindError: d.bindErr,
		Mode: d.cfg.Mode, Policy: d.sched.PolicyName(), Addr: d.cfg.Addr}
	if d.ln != nil {
		s.Addr = d.ln.Addr().String()
		s.Open = d.ln.Open()
	}
	d.mu.Unlock()
	if !s.Active {
		s.Since = time.Time{}
	}
	s.Decisions = d.sched.Decisions()
	s.Nodes = d.sched.Nodes()
	s.Accepted, s.Proxied, s.Local = d.stats.accepted.Load(), d.stats.proxied.Load(), d.stats.local.Load()
	s.Broken, s.Takeovers = d.stats.broken.Load(), d.stats.takeovers.Load()
	d.stats.mu.Lock()
	s.Rejected = maps.Clone(d.stats.rejected)
	d.stats.mu.Unlock()
	return s
}

var (
	descActive    = prometheus.NewDesc("mure_dispatch_active", "1 while this node holds the dispatcher role and its front door is open.", nil, nil)
	descDecisions = prometheus.NewDesc("mure_dispatch_decisions_total", "Connections scheduled by this node's front door, by policy (affinity: by the affinity table; none: no node).", []string{"policy"}, nil)
	descAccepted  = prometheus.NewDesc("mure_dispatch_accepted_total", "Connections accepted by this node's front door.", nil, nil)
	descRejected  = prometheus.NewDesc("mure_dispatch_rejected_total", "Connections refused by this node's front door, by reason.", []string{"reason"}, nil)
	descBroken    = prometheus.NewDesc("mure_dispatch_broken_total", "Relayed connections that ended with an error (proxy mode).", nil, nil)
	descTakeovers = prometheus.NewDesc("mure_dispatch_takeovers_total", "Times this node took the dispatcher role and opened its front door.", nil, nil)
	descNodeConns = prometheus.NewDesc("mure_dispatch_node_connections", "Client connections each node reported, plus this front door's assignments since.", []string{"node"}, nil)
	descNodeCPU   = prometheus.NewDesc("mure_dispatch_node_cpu_ratio", "CPU use each node reported, as a fraction of its quota.", []string{"node"}, nil)
)

// Describe implements prometheus.Collector.
func (d *Door) Describe(ch chan<- *prometheus.Desc) {
	for _, x := range []*prometheus.Desc{descActive, descDecisions, descAccepted, descRejected, descBroken, descTakeovers, descNodeConns, descNodeCPU} {
		ch <- x
	}
}

// Collect implements prometheus.Collector.
func (d *Door) Collect(ch chan<- prometheus.Metric) {
	s := d.Status()
	active := 0.0
	if s.Active {
		active = 1
	}
	ch <- prometheus.MustNewConstMetric(descActive, prometheus.GaugeValue, active)
	for p, n := range s.Decisions {
		ch <- prometheus.MustNewConstMetric(descDecisions, prometheus.CounterValue, float64(n), p)
	}
	ch <- prometheus.MustNewConstMetric(descAccepted, prometheus.CounterValue, float64(s.Accepted))
	for r, n := range s.Rejected {
		ch <- prometheus.MustNewConstMetric(descRejected, prometheus.CounterValue, float64(n), r)
	}
	ch <- prometheus.MustNewConstMetric(descBroken, prometheus.CounterValue, float64(s.Broken))
	ch <- prometheus.MustNewConstMetric(descTakeovers, prometheus.CounterValue, float64(s.Takeovers))
	for _, n := range s.Nodes {
		ch <- prometheus.MustNewConstMetric(descNodeConns, prometheus.GaugeValue, float64(n.Connections+n.Assigned), n.ID)
		ch <- prometheus.MustNewConstMetric(descNodeCPU, prometheus.GaugeValue, n.CPU, n.ID)
	}
}

// netipAddrPort parses a request's RemoteAddr.
func netipAddrPort(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	return unmapped(ap), err
}
