package bench

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart size, in points.
const (
	chartWidth  = 800
	chartHeight = 640
)

// WriteChart draws the report into file, a .png or .svg: on top the
// scenario's headline throughput per configuration (bars: mean over the
// runs; whiskers: min to max), below the p99 latency of all runs. The
// configurations are grouped by file size, one color per series (e.g.
// "read own", "write common", "PUT"). A conn-rate report is drawn as
// writeConnChart says.
func WriteChart(file string, r *Report) error {
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(file), "."))
	if format != "png" && format != "svg" {
		return fmt.Errorf("chart %s: want a .png or .svg file", file)
	}
	if len(r.Groups) == 0 {
		return fmt.Errorf("chart %s: nothing to draw", file)
	}
	if r.Scenario == "conn-rate" {
		return writeConnChart(file, format, r)
	}
	title := "mure bench " + r.Scenario
	if r.Label != "" {
		title += " — " + r.Label
	}
	lay := newLayout(r.Groups)
	top, err := lay.bars(title, r.metricUnit()+" (mean, min–max)", func(g *Group) (float64, float64, float64) {
		s := r.headline(g)
		return s.Mean, s.Min, s.Max
	}, true)
	if err != nil {
		return err
	}
	bottom, err := lay.bars("p99 latency", "ms", func(g *Group) (float64, float64, float64) {
		return g.Latency.P99, 0, 0
	}, false)
	if err != nil {
		return err
	}
	c, err := draw.NewFormattedCanvas(chartWidth, chartHeight, format)
	if err != nil {
		return err
	}
	plots := [][]*plot.Plot{{top}, {bottom}}
	pad := vg.Points(10)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: pad, PadY: 2 * pad, PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: pad}
	canvases := plot.Align(plots, tiles, draw.New(c))
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	return writeFileAtomic(file, buf.Bytes())
}

// layout places one bar per group: groups of the same size side by side,
// one slot per series, an empty slot between sizes.
type layout struct {
	groups []*Group
	series []string // in order of appearance
	sizes  []int64  // ascending
}

func newLayout(groups []*Group) *layout {
	l := &layout{groups: groups}
	for _, g := range groups {
		if !slices.Contains(l.series, g.Series) {
			l.series = append(l.series, g.Series)
		}
		if !slices.Contains(l.sizes, g.Size) {
			l.sizes = append(l.sizes, g.Size)
		}
	}
	slices.Sort(l.sizes)
	return l
}

// x is the data coordinate of the bar of series si at size index zi.
func (l *layout) x(zi, si int) float64 { return float64(zi*(len(l.series)+1) + si) }

// bars draws value(g) for every group; with whiskers, from lo to hi.
func (l *layout) bars(title, ylabel string, value func(*Group) (v, lo, hi float64), whiskers bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.X.Label.Text = "file size"
	p.Y.Min = 0
	p.Legend.Top = true
	slots := float64(len(l.sizes)*(len(l.series)+1)) + 0.5
	width := vg.Points(0.8 * (chartWidth - 120) / slots)
	top := 0.0 // highest value drawn
	var errs struct {
		plotter.XYs
		plotter.YErrors
	}
	for si, s := range l.series {
		var first *plotter.BarChart
		for _, g := range l.groups {
			if g.Series != s {
				continue
			}
			v, lo, hi := value(g)
			top = max(top, v, hi)
			bc, err := plotter.NewBarChart(plotter.Values{v}, width)
			if err != nil {
				return nil, err
			}
			x := l.x(slices.Index(l.sizes, g.Size), si)
			bc.XMin, bc.Color, bc.LineStyle.Width = x, plotutil.Color(si), 0
			p.Add(bc)
			if first == nil {
				first = bc
			}
			if whiskers && hi > lo {
				errs.XYs = append(errs.XYs, plotter.XY{X: x, Y: v})
				errs.YErrors = append(errs.YErrors, struct{ Low, High float64 }{v - lo, hi - v})
			}
		}
		p.Legend.Add(s, first)
	}
	if len(errs.XYs) > 0 {
		eb, err := plotter.NewYErrorBars(errs)
		if err != nil {
			return nil, err
		}
		p.Add(eb)
	}
	var ticks plot.ConstantTicks
	for zi, size := range l.sizes {
		ticks = append(ticks, plot.Tick{Value: l.x(zi, 0) + float64(len(l.series)-1)/2, Label: FormatSize(size)})
	}
	p.X.Tick.Marker = ticks
	if top > 0 {
		p.Y.Max = 1.35 * top // room for the legend above the bars
	}
	p.X.Min, p.X.Max = -0.75, l.x(len(l.sizes)-1, len(l.series)-1)+0.75
	return p, nil
}
