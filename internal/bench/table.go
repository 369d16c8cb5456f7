package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable writes the report as a text table: one line per group with
// the throughput over the runs (mean, min, max, standard deviation), the
// latency percentiles of all runs in milliseconds and the error counts,
// followed by the errors by kind. A conn-rate report has its own columns
// (see writeConnTable).
func WriteTable(w io.Writer, r *Report) error {
	title := "mure bench " + r.Scenario
	if r.Label != "" {
		title += " — " + r.Label
	}
	fmt.Fprintln(w, title)
	fmt.Fprintln(w, r.describe())
	if r.Scenario == "conn-rate" {
		return writeConnTable(w, r)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	unit, otherUnit := "MB/s", "ops/s"
	if r.Metric == MetricOpsPerSec {
		unit, otherUnit = otherUnit, unit
	}
	// text columns left-aligned: padded to the same width
	sw := len("series")
	for _, g := range r.Groups {
		sw = max(sw, len(g.Series))
	}
	fmt.Fprintf(tw, "%-*s\tsize\truns\t%s\tmin\tmax\tstddev\t%s\tp50 ms\tp90\tp99\tp99.9\tmax\terrors\tdropped\t\n",
		sw, "series", unit, otherUnit)
	for _, g := range r.Groups {
		h := r.headline(g)
		other := g.OpsPerSec.Mean
		if r.Metric == MetricOpsPerSec {
			other = g.MBPerSec.Mean
		}
		l := g.Latency
		fmt.Fprintf(tw, "%-*s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n",
			sw, g.Series, FormatSize(g.Size), len(g.Runs),
			num(h.Mean), num(h.Min), num(h.Max), num(h.Stddev), num(other),
			num(l.P50), num(l.P90), num(l.P99), num(l.P999), num(l.Max), g.Errors, g.Dropped)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, g := range r.Groups {
		if len(g.ErrorKinds) == 0 {
			continue
		}
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(g.ErrorKinds)) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, g.ErrorKinds[k]))
		}
		fmt.Fprintf(w, "errors %s %s: %s\n", g.Series, FormatSize(g.Size), strings.Join(kinds, ", "))
	}
	_, err := fmt.Fprintln(w)
	return err
}

// describe is the line of parameters under the title.
func (r *Report) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nodes %s  clients %d", strings.Join(r.Nodes, ","), r.Clients)
	if r.Files > 0 {
		fmt.Fprintf(&b, "  files %d", r.Files)
	}
	if r.URL != "" {
		fmt.Fprintf(&b, "  url %s", r.URL)
	}
	fmt.Fprintf(&b, "  reps %d  %s loop", r.Reps, r.Mode)
	if r.Rate > 0 {
		fmt.Fprintf(&b, " at %g/s", r.Rate)
	}
	var bounds []string
	if r.Count > 0 {
		bounds = append(bounds, fmt.Sprintf("%d requests", r.Count))
	}
	if r.Duration > 0 {
		bounds = append(bounds, secs(r.Duration))
	}
	fmt.Fprintf(&b, ", %s per run", strings.Join(bounds, " or "))
	if r.Warmup > 0 {
		fmt.Fprintf(&b, " after %s warm-up", secs(r.Warmup))
	}
	b.WriteString("  " + r.Started.Format(time.RFC3339))
	return b.String()
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}

// num formats a figure with about 3 significant digits.
func num(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x < 1:
		return fmt.Sprintf("%.3f", x)
	case x < 10:
		return fmt.Sprintf("%.2f", x)
	case x < 100:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.0f", x)
}
