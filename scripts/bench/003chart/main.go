// Command 003chart draws paper 003's charts from scripts/bench/003.sh's
// results and prints the tuning table of docs/benchmarks.md (paper 003).
//
//	go run ./scripts/bench/003chart [-in RESULTS.tsv] [-tuning TUNING.tsv] [-img DIR] [-knee MS]
//
// Charts (SVG, in -img): 003-latency.svg, p50 and p99 against offered load
// (the random generator's connections) for all requests and for memory hits,
// and 003-throughput.svg, req/s against offered load; each with bypass off
// and on; 003-tuning.svg, p99 and req/s of the latest run of each config of
// -tuning, from the latest run of each mode in -in whose config is -config
// (default: the last line's). The table: one row per run in -tuning, its
// saturation (req/s at the top step) and its knee (the last step whose p99
// is at most -knee ms, decision 0057), beside the mean of the -base
// config's runs (default: the first run's).
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// step is one line of the results: one offered load of one run.
type step struct {
	date                  string
	conns                 int
	rps, p50, p99         float64 // the random generator's (mostly the disk tier): 2xx/3xx a second
	hotRPS, hotP50, hotP9 float64 // the hot object's (memory hits)
	load                  string
	answers, misses       int // the node's answers in the step (hits, misses, bypasses), its misses
}

// run is the steps of one mode and config measured in one go, in order.
type run struct {
	bypass, config string
	steps          []step
}

// read splits a results file into runs: a run ends where the mode or the
// config changes or the connections stop growing.
func read(file string) ([]*run, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comma, r.FieldsPerRecord, r.LazyQuotes = '\t', -1, true
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("%s: no results", file)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, h := range []string{"bypass", "conns", "req_per_s", "p50_ms", "p99_ms", "hot_req_per_s", "hot_p50_ms", "hot_p99_ms"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("%s: no column %s", file, h)
		}
	}
	field := func(row []string, h string) string {
		if i, ok := col[h]; ok && i < len(row) {
			return row[i]
		}
		return ""
	}
	var runs []*run
	for _, row := range rows[1:] {
		s := step{date: field(row, "date"), load: field(row, "load")}
		var errs [7]error
		s.conns, errs[0] = strconv.Atoi(field(row, "conns"))
		for i, p := range []struct {
			v *float64
			h string
		}{{&s.rps, "req_per_s"}, {&s.p50, "p50_ms"}, {&s.p99, "p99_ms"}, {&s.hotRPS, "hot_req_per_s"}, {&s.hotP50, "hot_p50_ms"}, {&s.hotP9, "hot_p99_ms"}} {
			*p.v, errs[i+1] = strconv.ParseFloat(field(row, p.h), 64)
		}
		for _, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("%s: bad line %q: %w", file, strings.Join(row, " "), err)
			}
		}
		// ok_req_per_s leaves out refusals (wrk's req/s counts every answer);
		// older lines have none.
		if v, err := strconv.ParseFloat(field(row, "ok_req_per_s"), 64); err == nil {
			s.rps = v
		}
		for _, h := range []string{"hits_mem", "hits_disk", "miss", "overload"} {
			n, _ := strconv.Atoi(field(row, h))
			s.answers += n
		}
		s.misses, _ = strconv.Atoi(field(row, "miss"))
		b, c := field(row, "bypass"), field(row, "config")
		if n := len(runs); n == 0 || runs[n-1].bypass != b || runs[n-1].config != c ||
			runs[n-1].steps[len(runs[n-1].steps)-1].conns >= s.conns {
			runs = append(runs, &run{bypass: b, config: c})
		}
		last := runs[len(runs)-1]
		last.steps = append(last.steps, s)
	}
	return runs, nil
}

// saturation is the top step: the closed loop's throughput once the
// cache is saturated, and the disk tier at its fullest (the first steps
// still take misses from the origin, which is faster than the disk).
func (r *run) saturation() step { return r.steps[len(r.steps)-1] }

// missShare is the share of the random requests that were misses (-1 when
// unknown): the node's answers include the hot object's, and the step's
// length is not recorded, so it is the answers over both generators' rates.
func (s step) missShare() float64 {
	if s.answers == 0 || s.rps+s.hotRPS == 0 || s.rps == 0 {
		return -1
	}
	dur := float64(s.answers) / (s.rps + s.hotRPS)
	return min(1, float64(s.misses)/(s.rps*dur))
}

// most is the step with the most req/s.
func (r *run) most() step {
	best := r.steps[0]
	for _, s := range r.steps {
		if s.rps > best.rps {
			best = s
		}
	}
	return best
}

// knee is the last step before the first whose p99 exceeds ms (false when
// even the lightest step's does).
func (r *run) knee(ms float64) (step, bool) {
	var k step
	ok := false
	for _, s := range r.steps {
		if s.p99 > ms {
			break
		}
		k, ok = s, true
	}
	return k, ok
}

func main() {
	in := flag.String("in", "docs/bench/003/results.tsv", "results with bypass off and on, for the charts")
	tuning := flag.String("tuning", "docs/bench/003/tuning.tsv", "results of the tuning runs, for the table ('' for none)")
	img := flag.String("img", "docs/img", "directory of the charts")
	config := flag.String("config", "", "the config whose runs the charts draw (default: the last line's)")
	base := flag.String("base", "", "the tuning table's baseline config (default: the first run's)")
	knee := flag.Float64("knee", 500, "p99 in ms beyond which a step is past the knee")
	since := flag.String("since", "", "003-tuning.svg draws only the runs started at or after this date (e.g. 2026-11-26T00:18)")
	flag.Parse()
	if err := charts(*in, *img, *config); err != nil {
		fmt.Fprintln(os.Stderr, "003chart:", err)
		os.Exit(1)
	}
	if *tuning == "" {
		return
	}
	if err := tuningChart(*tuning, *img, *knee, *since); err != nil {
		fmt.Fprintln(os.Stderr, "003chart:", err)
		os.Exit(1)
	}
	if err := table(*tuning, *base, *knee); err != nil {
		fmt.Fprintln(os.Stderr, "003chart:", err)
		os.Exit(1)
	}
}

// charts draws the latest run of each mode of config.
func charts(in, img, config string) error {
	runs, err := read(in)
	if err != nil {
		return err
	}
	if config == "" {
		config = runs[len(runs)-1].config
	}
	latest := map[string]*run{}
	for _, r := range runs {
		if r.config == config {
			latest[r.bypass] = r
		}
	}
	if latest["false"] == nil && latest["true"] == nil {
		return fmt.Errorf("%s: no run of config %q", in, config)
	}
	title := "paper 003 on the testbed: " + config
	lat := []*plot.Plot{
		panel(latest, "all requests (random objects, mostly the disk tier)", "latency (ms, log)", true,
			[]metric{{"p99", func(s step) float64 { return s.p99 }, nil}, {"p50", func(s step) float64 { return s.p50 }, dashed}}),
		panel(latest, "memory hits (one hot object, 2 connections)", "latency (ms, log)", true,
			[]metric{{"p99", func(s step) float64 { return s.hotP9 }, nil}, {"p50", func(s step) float64 { return s.hotP50 }, dashed}}),
	}
	thr := []*plot.Plot{
		panel(latest, "all requests (random objects, mostly the disk tier)", "req/s", false,
			[]metric{{"req/s", func(s step) float64 { return s.rps }, nil}}),
		panel(latest, "memory hits (one hot object, 2 connections)", "req/s", false,
			[]metric{{"req/s", func(s step) float64 { return s.hotRPS }, nil}}),
	}
	if err := save(filepath.Join(img, "003-latency.svg"), title, lat); err != nil {
		return err
	}
	return save(filepath.Join(img, "003-throughput.svg"), title, thr)
}

var (
	dashed = []vg.Length{vg.Points(5), vg.Points(3)}
	modes  = []struct {
		key, label string
		color      color.RGBA
	}{
		{"false", "bypass off", color.RGBA{178, 24, 43, 255}},
		{"true", "bypass on", color.RGBA{33, 102, 172, 255}},
	}
)

// metric is one line per mode: a figure of each step, drawn solid or dashed.
type metric struct {
	label  string
	of     func(step) float64
	dashes []vg.Length
}

// panel draws the metrics of each mode against the random generator's
// connections (log scale).
func panel(latest map[string]*run, title, ylabel string, logY bool, ms []metric) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "offered load: connections of the random generator (log)"
	p.Y.Label.Text = ylabel
	p.X.Scale = plot.LogScale{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	if logY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	} else {
		p.Y.Min = 0
	}
	var ticks []plot.Tick
	for _, m := range modes {
		r := latest[m.key]
		if r == nil {
			continue
		}
		for _, met := range ms {
			var xy plotter.XYs
			for _, s := range r.steps {
				xy = append(xy, plotter.XY{X: float64(s.conns), Y: met.of(s)})
			}
			l, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				continue // a step without a figure (wrk failed): leave the line out
			}
			l.Color, l.Width, l.Dashes = m.color, vg.Points(1.5), met.dashes
			pts.Color, pts.Shape = m.color, draw.CircleGlyph{}
			p.Add(l, pts)
			p.Legend.Add(m.label+", "+met.label, l, pts)
		}
		for _, s := range r.steps {
			ticks = append(ticks, plot.Tick{Value: float64(s.conns), Label: strconv.Itoa(s.conns)})
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	if logY {
		p.Y.Max *= 4 // room for the legend above the lines
	} else {
		p.Y.Max *= 1.3
	}
	return p
}

// save writes the panels side by side into one SVG file.
func save(file, title string, panels []*plot.Plot) error {
	const w, h = 14 * vg.Centimeter, 11 * vg.Centimeter
	c := vgsvg.New(vg.Length(len(panels))*w, h+vg.Centimeter)
	dc := draw.New(c)
	sty := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, 11), Handler: plot.DefaultTextHandler}
	dc.FillText(sty, vg.Point{X: vg.Points(8), Y: dc.Max.Y - vg.Points(16)}, title)
	dc.Max.Y -= vg.Centimeter
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Centimeter, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	fmt.Println(file)
	return f.Close()
}

// table prints the tuning table: each run's saturation and knee beside the
// mean of the baseline config's runs.
func table(file, base string, kneeMS float64) error {
	runs, err := read(file)
	if err != nil {
		return err
	}
	if base == "" {
		base = runs[0].config
	}
	var sat, n float64
	for _, r := range runs {
		if r.config == base && r.bypass == runs[0].bypass {
			sat += r.saturation().rps
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("%s: no run of the baseline %q", file, base)
	}
	sat /= n
	fmt.Printf("\nsaturation: req/s at the top step; knee: the last step whose p99 is at most %g ms; ratios against the mean saturation of %q, bypass=%s (%.1f req/s)\n\n",
		kneeMS, base, runs[0].bypass, sat)
	fmt.Println("| config | bypass | started | saturation req/s (conns) | × baseline | misses there (of the random requests) | knee: conns (req/s, p99 ms) | p99 ms at the top step | hot p99 ms at the top step | most req/s (conns) | load |")
	fmt.Println("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range runs {
		s, m := r.saturation(), r.most()
		knee := "none"
		if k, ok := r.knee(kneeMS); ok {
			knee = fmt.Sprintf("%d (%.1f, %.0f)", k.conns, k.rps, k.p99)
		}
		misses := "–"
		if r := s.missShare(); r >= 0 {
			misses = fmt.Sprintf("%.0f%%", 100*r)
		}
		fmt.Printf("| %s | %s | %s | %.1f (%d) | %.2f | %s | %s | %.0f | %.0f | %.1f (%d) | %s–%s |\n",
			r.config, r.bypass, r.steps[0].date, s.rps, s.conns, s.rps/sat, misses, knee, s.p99, s.hotP9,
			m.rps, m.conns, r.steps[0].load, s.load)
	}
	return nil
}

// tuningChart draws the latest run of each config of the tuning file: p99
// and req/s of the random requests against offered load, a line per config,
// and the knee's threshold dashed.
func tuningChart(file, img string, kneeMS float64, since string) error {
	runs, err := read(file)
	if err != nil {
		return err
	}
	var order []string
	latest := map[string]*run{}
	for _, r := range runs {
		if r.steps[0].date < since {
			continue
		}
		k := r.config + " bypass=" + r.bypass
		if latest[k] == nil {
			order = append(order, k)
		}
		latest[k] = r
	}
	// the settings every config shares go to the title, the rest label the lines
	common := strings.Fields(order[0])
	for _, k := range order[1:] {
		f := strings.Fields(k)
		common = slices.DeleteFunc(common, func(c string) bool { return !slices.Contains(f, c) })
	}
	label := func(k string) string {
		f := slices.DeleteFunc(strings.Fields(k), func(c string) bool { return slices.Contains(common, c) })
		if len(f) == 0 {
			return "baseline"
		}
		return strings.Join(f, " ")
	}
	p99, rps := plot.New(), plot.New()
	p99.Title.Text, rps.Title.Text = "all requests: p99", "all requests: req/s (2xx/3xx, log)"
	p99.Y.Label.Text, rps.Y.Label.Text = "p99 (ms, log)", "req/s"
	p99.Y.Scale, p99.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	rps.Y.Scale, rps.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	var ticks []plot.Tick
	for i, k := range order {
		r := latest[k]
		var lat, thr plotter.XYs
		for _, s := range r.steps {
			lat = append(lat, plotter.XY{X: float64(s.conns), Y: s.p99})
			thr = append(thr, plotter.XY{X: float64(s.conns), Y: s.rps})
			ticks = append(ticks, plot.Tick{Value: float64(s.conns), Label: strconv.Itoa(s.conns)})
		}
		for _, pl := range []struct {
			p  *plot.Plot
			xy plotter.XYs
		}{{p99, lat}, {rps, thr}} {
			l, pts, err := plotter.NewLinePoints(pl.xy)
			if err != nil {
				continue
			}
			c := plotutil.Color(i)
			l.Color, l.Width, pts.Color, pts.Shape = c, vg.Points(1.5), c, plotutil.Shape(i)
			pl.p.Add(l, pts)
			pl.p.Legend.Add(label(k), l, pts)
		}
	}
	knee, err := plotter.NewLine(plotter.XYs{{X: ticks[0].Value, Y: kneeMS}, {X: 64, Y: kneeMS}})
	if err == nil {
		for _, t := range ticks {
			knee.XYs[1].X = max(knee.XYs[1].X, t.Value)
		}
		knee.Color, knee.Dashes = color.Gray{Y: 120}, dashed
		p99.Add(knee)
		p99.Legend.Add(fmt.Sprintf("knee threshold (%g ms)", kneeMS), knee)
	}
	for _, p := range []*plot.Plot{p99, rps} {
		p.X.Label.Text = "offered load: connections of the random generator (log)"
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.ConstantTicks(ticks)
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.TextStyle.Font.Size = vg.Points(8)
		p.Add(plotter.NewGrid())
	}
	p99.Y.Max *= 30
	rps.Y.Max *= 30
	return save(filepath.Join(img, "003-tuning.svg"), "paper 003's tuning on mure's knobs: "+strings.Join(common, " "), []*plot.Plot{p99, rps})
}
