package bench

import (
	"math"
	"time"
)

// CPUUsage is the CPU use of every node during one measured run, from
// their GET /status polled every Interval (host.cpu_seconds, a counter, and
// host.cpu_quota_cores): paper 001's per-node CPU over time.
type CPUUsage struct {
	Interval float64   `json:"interval_s"`
	Nodes    []NodeCPU `json:"nodes"`
	// Samples spread the nodes' use at each poll: min, mean and max over
	// the nodes that answered this poll and the one before.
	Samples []CPUSpread `json:"samples"`
	Polls   int         `json:"polls"`
	Failed  int         `json:"failed_polls,omitempty"` // polls of a node that failed
}

// NodeCPU is one node's CPU use, in percent of its quota (of one core
// when it has none: a node that is not in a cgroup reports the machine's
// CPU time, which can then exceed 100%).
type NodeCPU struct {
	Node   string     `json:"node"`
	Quota  float64    `json:"quota_cores"` // 0: none
	Mean   float64    `json:"mean_pct"`    // over the run
	Points []CPUPoint `json:"points"`
}

// CPUPoint is the use over the interval that ends at T seconds after the
// start of the measured phase.
type CPUPoint struct {
	T   float64 `json:"t_s"`
	Pct float64 `json:"pct"`
}

// CPUSpread is the spread of the nodes' use at one poll.
type CPUSpread struct {
	T     float64 `json:"t_s"`
	Min   float64 `json:"min_pct"`
	Avg   float64 `json:"avg_pct"`
	Max   float64 `json:"max_pct"`
	Nodes int     `json:"nodes"`
}

// cpuReading is one node's answer to one poll.
type cpuReading struct {
	ok         bool
	at         time.Time // halfway between the request and the answer
	cpu, quota float64   // seconds, cores
}

// cpuUsage computes the use of nodes from the readings of each poll
// (readings[poll][node]) taken from start on. An interval in which a
// node's counter went back (it restarted) is left out.
func cpuUsage(nodes []string, start time.Time, interval time.Duration, readings [][]cpuReading) *CPUUsage {
	u := &CPUUsage{Interval: interval.Seconds(), Nodes: make([]NodeCPU, len(nodes)), Polls: len(readings)}
	last := make([]cpuReading, len(nodes)) // each node's latest good reading
	busy := make([]float64, len(nodes))    // CPU seconds over the intervals kept
	elapsed := make([]float64, len(nodes)) // their length
	for i, n := range nodes {
		u.Nodes[i].Node = n
	}
	for _, poll := range readings {
		s := CPUSpread{Min: math.Inf(1), Max: math.Inf(-1)}
		for i, r := range poll {
			if !r.ok {
				u.Failed++
				continue
			}
			prev := last[i]
			last[i] = r
			u.Nodes[i].Quota = r.quota
			dt, dc := r.at.Sub(prev.at).Seconds(), r.cpu-prev.cpu
			if !prev.ok || dt <= 0 || dc < 0 {
				continue
			}
			busy[i] += dc
			elapsed[i] += dt
			pct := 100 * dc / dt / cores(r.quota)
			t := r.at.Sub(start).Seconds()
			u.Nodes[i].Points = append(u.Nodes[i].Points, CPUPoint{T: t, Pct: pct})
			s.T = max(s.T, t)
			s.Min, s.Max, s.Avg = min(s.Min, pct), max(s.Max, pct), s.Avg+pct
			s.Nodes++
		}
		if s.Nodes > 0 {
			s.Avg /= float64(s.Nodes)
			u.Samples = append(u.Samples, s)
		}
	}
	for i := range u.Nodes {
		if elapsed[i] > 0 {
			u.Nodes[i].Mean = 100 * busy[i] / elapsed[i] / cores(u.Nodes[i].Quota)
		}
	}
	return u
}

// cores is what a percentage is of: the quota, or one core without one.
func cores(quota float64) float64 {
	if quota > 0 {
		return quota
	}
	return 1
}

// CPUSummary sums up the CPU use over a group's runs.
type CPUSummary struct {
	// Nodes holds each node's mean use over the runs, in percent.
	Nodes []NodeMean `json:"nodes"`
	// Low, Avg and High are the lowest, mean and highest of those means:
	// how evenly the policy spread the work.
	Low  float64 `json:"low_pct"`
	Avg  float64 `json:"avg_pct"`
	High float64 `json:"high_pct"`
	// SampleMin, SampleAvg and SampleMax average the spread of every
	// poll (paper 001's figures 8 and 9, over time).
	SampleMin float64 `json:"sample_min_pct"`
	SampleAvg float64 `json:"sample_avg_pct"`
	SampleMax float64 `json:"sample_max_pct"`
}

// NodeMean is one node's mean CPU use.
type NodeMean struct {
	Node string  `json:"node"`
	Mean float64 `json:"mean_pct"`
}

// summarizeCPU sums up the runs' CPU use; nil when no run has any.
func summarizeCPU(runs []*Result) *CPUSummary {
	var sum CPUSummary
	var order []string
	total, count := map[string]float64{}, map[string]int{}
	samples := 0
	for _, r := range runs {
		if r.CPU == nil {
			continue
		}
		for _, n := range r.CPU.Nodes {
			if len(n.Points) == 0 {
				continue
			}
			if count[n.Node] == 0 {
				order = append(order, n.Node)
			}
			total[n.Node] += n.Mean
			count[n.Node]++
		}
		for _, s := range r.CPU.Samples {
			sum.SampleMin += s.Min
			sum.SampleAvg += s.Avg
			sum.SampleMax += s.Max
			samples++
		}
	}
	if len(order) == 0 {
		return nil
	}
	sum.Low, sum.High = math.Inf(1), math.Inf(-1)
	for _, n := range order {
		m := total[n] / float64(count[n])
		sum.Nodes = append(sum.Nodes, NodeMean{Node: n, Mean: m})
		sum.Low, sum.High, sum.Avg = min(sum.Low, m), max(sum.High, m), sum.Avg+m
	}
	sum.Avg /= float64(len(order))
	if samples > 0 {
		sum.SampleMin /= float64(samples)
		sum.SampleAvg /= float64(samples)
		sum.SampleMax /= float64(samples)
	}
	return &sum
}
