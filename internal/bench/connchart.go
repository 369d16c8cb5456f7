package bench

import (
	"bytes"
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// connPanelHeight is the height of one panel of a conn-rate chart, in
// points.
const connPanelHeight = 280

// writeConnChart draws a conn-rate report: for each series (policy) the
// nodes' CPU use over its first run, min, mean and max over the nodes at
// each poll (paper 001's figures 8 and 9), and below, the mean and p99
// reply times of every series side by side.
func writeConnChart(file, format string, r *Report) error {
	var plots [][]*plot.Plot
	xmax, ymax := 0.0, 100.0 // the same scales on every CPU panel
	for _, g := range r.Groups {
		p, err := cpuPanel(g)
		if err != nil {
			return err
		}
		xmax, ymax = max(xmax, p.X.Max), max(ymax, p.Y.Max)
		plots = append(plots, []*plot.Plot{p})
	}
	for _, row := range plots {
		row[0].X.Min, row[0].X.Max, row[0].Y.Max = 0, xmax, 1.3*ymax // room for the legend
	}
	bars, err := replyPanel(r)
	if err != nil {
		return err
	}
	plots = append(plots, []*plot.Plot{bars})
	height := vg.Length(max(chartHeight, connPanelHeight*len(plots)))
	c, err := draw.NewFormattedCanvas(chartWidth, height, format)
	if err != nil {
		return err
	}
	pad := vg.Points(10)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: pad, PadY: 2 * pad, PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: pad}
	canvases := plot.Align(plots, tiles, draw.New(c))
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	return writeFileAtomic(file, buf.Bytes())
}

// cpuPanel draws the spread of the nodes' CPU use over the group's first
// run that has samples.
func cpuPanel(g *Group) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "CPU use per node — " + g.Series
	p.X.Label.Text = "s"
	p.Y.Label.Text = "% of quota"
	p.Y.Min = 0
	p.Legend.Top = true
	var cpu *CPUUsage
	for i, r := range g.Runs {
		if r.CPU != nil && len(r.CPU.Samples) > 0 {
			cpu = r.CPU
			if len(g.Runs) > 1 {
				p.Title.Text += fmt.Sprintf(" (run %d of %d)", i+1, len(g.Runs))
			}
			break
		}
	}
	if cpu == nil {
		p.Title.Text += ": no CPU samples"
		return p, nil
	}
	top := 0.0
	for i, line := range []struct {
		name string
		v    func(CPUSpread) float64
	}{
		{"max", func(s CPUSpread) float64 { return s.Max }},
		{"avg", func(s CPUSpread) float64 { return s.Avg }},
		{"min", func(s CPUSpread) float64 { return s.Min }},
	} {
		xys := make(plotter.XYs, len(cpu.Samples))
		for j, s := range cpu.Samples {
			xys[j] = plotter.XY{X: s.T, Y: line.v(s)}
			top = max(top, xys[j].Y)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = plotutil.Color(i), vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(line.name, l)
	}
	p.Y.Max = top
	return p, nil
}

// replyPanel draws the mean and p99 reply time of every series.
func replyPanel(r *Report) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "reply time (request written to first byte of the reply)"
	p.Y.Label.Text = "ms"
	p.Y.Min = 0
	p.Legend.Top = true
	var names []string
	mean, p99 := make(plotter.Values, len(r.Groups)), make(plotter.Values, len(r.Groups))
	top := 0.0
	for i, g := range r.Groups {
		names = append(names, g.Series)
		if g.Conn != nil {
			mean[i], p99[i] = g.Conn.Reply.Mean, g.Conn.Reply.P99
			top = max(top, p99[i], mean[i])
		}
	}
	width := vg.Points(min(60, 0.35*(chartWidth-120)/float64(len(r.Groups))))
	for i, b := range []struct {
		name string
		v    plotter.Values
	}{{"mean", mean}, {"p99", p99}} {
		bc, err := plotter.NewBarChart(b.v, width)
		if err != nil {
			return nil, err
		}
		bc.Color, bc.LineStyle.Width = plotutil.Color(i), 0
		bc.Offset = vg.Length(2*i-1) * width / 2
		p.Add(bc)
		p.Legend.Add(b.name, bc)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.75, float64(len(names))-0.25
	if top > 0 {
		p.Y.Max = 1.3 * top // room for the legend
	}
	return p, nil
}
