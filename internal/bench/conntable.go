package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// writeConnTable writes a conn-rate report: per series (policy) the
// replies/s over the runs, the reply, connection and connect times in
// milliseconds, the nodes' CPU use (the mean over the polls of the lowest,
// mean and highest node), the errors; then each series' per-node CPU
// means, where its requests landed and its errors by kind.
func writeConnTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	sw := len("series")
	for _, g := range r.Groups {
		sw = max(sw, len(g.Series))
	}
	fmt.Fprintf(tw, "%-*s\truns\treplies/s\tmin\tmax\treply ms\tp50\tp90\tp99\tconnection ms\tp99\tconnect ms\tcpu%% min\tavg\tmax\terrors\tdropped\t\n", sw, "series")
	for _, g := range r.Groups {
		c := g.Conn
		if c == nil {
			c = &ConnTimes{}
		}
		cpu := g.CPU
		if cpu == nil {
			cpu = &CPUSummary{}
		}
		fmt.Fprintf(tw, "%-*s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n",
			sw, g.Series, len(g.Runs), num(g.OpsPerSec.Mean), num(g.OpsPerSec.Min), num(g.OpsPerSec.Max),
			num(c.Reply.Mean), num(c.Reply.P50), num(c.Reply.P90), num(c.Reply.P99),
			num(c.Connection.Mean), num(c.Connection.P99), num(c.Connect.Mean),
			num(cpu.SampleMin), num(cpu.SampleAvg), num(cpu.SampleMax), g.Errors, g.Dropped)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, g := range r.Groups {
		if g.CPU != nil {
			var nodes []string
			for _, n := range g.CPU.Nodes {
				nodes = append(nodes, fmt.Sprintf("%s %s%%", n.Node, num(n.Mean)))
			}
			fmt.Fprintf(w, "cpu %s (mean per node): %s\n", g.Series, strings.Join(nodes, ", "))
		} else if polls, failed := cpuPolls(g); polls > 0 {
			fmt.Fprintf(w, "cpu %s: no figure, %d of %d polls of the nodes' /status failed\n", g.Series, failed, polls)
		}
		if g.Conn != nil && len(g.Conn.FinalHosts) > 0 {
			var hosts []string
			for _, h := range slices.Sorted(maps.Keys(g.Conn.FinalHosts)) {
				hosts = append(hosts, fmt.Sprintf("%s %d", h, g.Conn.FinalHosts[h]))
			}
			fmt.Fprintf(w, "served %s (%d redirects): %s\n", g.Series, g.Conn.Redirects, strings.Join(hosts, ", "))
		}
		if len(g.ErrorKinds) > 0 {
			var kinds []string
			for _, k := range slices.Sorted(maps.Keys(g.ErrorKinds)) {
				kinds = append(kinds, fmt.Sprintf("%s %d", k, g.ErrorKinds[k]))
			}
			fmt.Fprintf(w, "errors %s: %s\n", g.Series, strings.Join(kinds, ", "))
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// cpuPolls counts the status polls of a group's nodes and those that failed.
func cpuPolls(g *Group) (polls, failed int) {
	for _, r := range g.Runs {
		if r.CPU != nil {
			polls += r.CPU.Polls * len(r.CPU.Nodes)
			failed += r.CPU.Failed
		}
	}
	return polls, failed
}
