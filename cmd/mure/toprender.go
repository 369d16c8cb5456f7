package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/history"
	"github.com/mure-dev/mure/internal/node"
)

// sparkSeconds is how far back the sparklines of `mure top` reach.
const sparkSeconds = 60

// renderTop draws one screen of `mure top`: the cluster's roles, a line
// per member with its latest figures, then a minute of CPU and requests
// per node as sparklines. problem, when set, says why the screen may be
// stale.
func renderTop(w io.Writer, st node.Status, set *history.Set, now time.Time, width int, problem string) error {
	fmt.Fprintf(w, "mure top — cluster %s — seen from %s — %s   (Ctrl-C quits)\n", or(st.ClusterID, "?"), or(st.Node.ID, "?"), now.Format("15:04:05"))
	holder := or(st.Dispatch.Holder, "none")
	if st.Dispatch.How != "" {
		holder += " (" + st.Dispatch.How + ")"
	}
	fmt.Fprintf(w, "raft leader %s · dispatcher role %s\n", or(st.Leader, "none"), holder)
	if problem != "" {
		fmt.Fprintf(w, "! %s\n", problem)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "NODE\tSTATE\tROLES\tCPU\tPRESS\tMEM\tDISK\tRD/s\tWR/s\tRX/s\tTX/s\tCONNS\tREQ/s\tERR/s\tP50ms\tP99ms\tFILES\tUNDER\tHEAL\t")
	for _, m := range st.Members {
		p, _ := latest(set, m.ID, now)
		v := func(i int) float32 { return p.V[i] }
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			m.ID, memberState(m), roles(st, m),
			pct(v(history.CPU)), pct(v(history.Pressure)), bytesOr(v(history.Mem)), bytesOr(v(history.DiskUsed)),
			bytesOr(v(history.DiskRead)), bytesOr(v(history.DiskWrite)), bytesOr(v(history.NetRx)), bytesOr(v(history.NetTx)),
			count(v(history.Conns)), rate(v(history.RequestRate)), rate(v(history.ErrorRate)),
			rate(v(history.P50)), rate(v(history.P99)), count(v(history.Files)), count(v(history.UnderReplicated)), count(v(history.Healing)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	n := max(10, min(sparkSeconds, width-24))
	for _, chart := range []struct {
		title string
		field int
	}{{"CPU of quota", history.CPU}, {"requests/s", history.RequestRate}} {
		fmt.Fprintf(w, "\n%s, last %d s:\n", chart.title, n)
		for _, m := range st.Members {
			line, top := spark(set, m.ID, chart.field, now, n)
			peak := rate(top)
			if chart.field == history.CPU {
				peak = pct(top)
			}
			fmt.Fprintf(w, "  %-10s %s  max %s\n", m.ID, line, peak)
		}
	}
	return nil
}

// latest returns the node's newest point of the last few seconds (a
// dead node's last figures are not shown as if they were now).
func latest(set *history.Set, id string, now time.Time) (history.Point, bool) {
	if se, ok := set.Lookup(id); ok {
		if p, ok := se.Last(); ok && now.Unix()-p.T <= 5 {
			return p, true
		}
	}
	return history.Unknown(0), false
}

func memberState(m cluster.Member) string {
	s := "down"
	switch m.Gossip {
	case cluster.GossipAlive:
		s = "up"
	case cluster.GossipSuspect:
		s = "suspect"
	}
	if m.State != "" && m.State != "active" {
		s += "," + string(m.State)
	}
	return s
}

func roles(st node.Status, m cluster.Member) string {
	var r []string
	if m.Leader {
		r = append(r, "leader")
	}
	switch m.Suffrage {
	case "voter":
		r = append(r, "voter")
	case "nonvoter":
		r = append(r, "nonvoter")
	}
	if st.Dispatch.Holder == m.ID {
		r = append(r, "dispatcher")
	}
	if len(r) == 0 {
		return "-"
	}
	return strings.Join(r, ",")
}

// spark draws the last n seconds of a figure, scaled to its largest value
// (CPU to 100%); a second without a point is a blank.
func spark(set *history.Set, id string, field int, now time.Time, n int) (string, float32) {
	levels := []rune("▁▂▃▄▅▆▇█")
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(math.NaN())
	}
	from := now.Unix() - int64(n)
	if se, ok := set.Lookup(id); ok {
		fine, _ := se.Since(from, math.MaxInt64)
		for _, p := range fine {
			if i := int(p.T - from - 1); i >= 0 && i < n {
				vals[i] = p.V[field]
			}
		}
	}
	var top float32
	for _, v := range vals {
		if !math.IsNaN(float64(v)) && v > top {
			top = v
		}
	}
	scale := top
	if field == history.CPU {
		scale = max(1, top)
	}
	var b strings.Builder
	for _, v := range vals {
		switch {
		case math.IsNaN(float64(v)):
			b.WriteRune(' ')
		case scale <= 0:
			b.WriteRune(levels[0])
		default:
			b.WriteRune(levels[min(len(levels)-1, int(float64(v/scale)*float64(len(levels)-1)+0.5))])
		}
	}
	if math.IsNaN(float64(top)) {
		top = 0
	}
	return b.String(), top
}

func unknown(v float32) bool { return math.IsNaN(float64(v)) }

func pct(v float32) string {
	if unknown(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

func rate(v float32) string {
	switch {
	case unknown(v):
		return "-"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

func count(v float32) string {
	if unknown(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

func bytesOr(v float32) string {
	if unknown(v) {
		return "-"
	}
	return human(int64(v))
}
