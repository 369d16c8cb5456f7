package bench

import (
	"math"
	"time"
)

// Metrics a scenario reports as its headline figure.
const (
	MetricMBPerSec  = "mb_per_s"
	MetricOpsPerSec = "ops_per_s"
)

// Report is the outcome of a scenario: one Group per configuration.
type Report struct {
	Scenario string    `json:"scenario"`
	Label    string    `json:"label,omitempty"`
	Started  time.Time `json:"started"`
	Nodes    []string  `json:"nodes"`
	Clients  int       `json:"clients"`
	Files    int       `json:"files,omitempty"`
	URL      string    `json:"url,omitempty"` // conn-rate's page
	Reps     int       `json:"reps"`
	Mode     string    `json:"mode"` // "closed" or "open"
	Rate     float64   `json:"rate,omitempty"`
	Count    int64     `json:"count,omitempty"`
	Duration float64   `json:"duration_s,omitempty"`
	Warmup   float64   `json:"warmup_s,omitempty"`
	Metric   string    `json:"metric"` // MetricMBPerSec or MetricOpsPerSec
	Groups   []*Group  `json:"groups"`
}

// Group is one configuration (an operation on files of one size) and its
// repetitions.
type Group struct {
	Series string `json:"series"` // what the chart's legend shows, e.g. "read own", "PUT"
	Op     string `json:"op"`
	Sets   string `json:"sets,omitempty"`
	Size   int64  `json:"size"`

	Runs []*Result `json:"runs"`

	// Over the runs: the spread of the throughputs, the merged latency
	// distribution and the summed counts.
	MBPerSec   Spread           `json:"mb_per_s"`
	OpsPerSec  Spread           `json:"ops_per_s"`
	Latency    Latency          `json:"latency"`
	Requests   int64            `json:"requests"`
	Errors     int64            `json:"errors"`
	ErrorKinds map[string]int64 `json:"error_kinds,omitempty"`
	Dropped    int64            `json:"dropped,omitempty"`

	// conn-rate only: the merged times of the runs and their CPU use.
	Conn *ConnTimes  `json:"conn,omitempty"`
	CPU  *CPUSummary `json:"cpu,omitempty"`
}

// Spread is the mean, extremes and sample standard deviation of a figure
// over repetitions (Stddev is 0 for one run).
type Spread struct {
	Mean   float64 `json:"mean"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Stddev float64 `json:"stddev"`
}

func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := Spread{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.Stddev = math.Sqrt(ss / float64(len(xs)-1))
	}
	return s
}

// summarize computes the group's figures from its runs.
func (g *Group) summarize() {
	var mbs, ops []float64
	for _, r := range g.Runs {
		mbs = append(mbs, r.MBPerSec)
		ops = append(ops, r.OpsPerSec)
	}
	total := mergeResults(g.Runs)
	g.Requests, g.Errors, g.Dropped, g.ErrorKinds = total.Requests, total.Errors, total.Dropped, total.ErrorKinds
	g.MBPerSec, g.OpsPerSec = spreadOf(mbs), spreadOf(ops)
	g.Latency = total.Latency
	g.Conn, g.CPU = total.Conn, summarizeCPU(g.Runs)
}

// newReport starts the report of scenario name run with p (after defaults).
func newReport(name, metric string, p *Params) *Report {
	r := &Report{
		Scenario: name, Label: p.Label, Started: time.Now().UTC().Truncate(time.Second),
		Nodes: p.Nodes, Clients: p.Clients, Reps: p.Reps, Mode: "closed",
		Rate: p.Load.Rate, Count: p.Load.Count,
		Duration: p.Load.Duration.Seconds(), Warmup: p.Load.Warmup.Seconds(),
		Metric: metric,
	}
	if p.Load.Rate > 0 {
		r.Mode = "open"
	}
	return r
}

// headline returns the spread of the report's metric in g.
func (r *Report) headline(g *Group) Spread {
	if r.Metric == MetricOpsPerSec {
		return g.OpsPerSec
	}
	return g.MBPerSec
}

// metricUnit is the unit of the report's metric.
func (r *Report) metricUnit() string {
	if r.Metric == MetricOpsPerSec {
		return "ops/s"
	}
	return "MB/s"
}
