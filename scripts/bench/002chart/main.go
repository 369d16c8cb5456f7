// Command 002chart draws paper 002's charts from scripts/bench/002.sh's
// results: aggregate MB/s against the number of client hosts, writes and
// reads side by side, one line per arrangement, and the target (0.9 × N ×
// one Gfarm-like client's rate) dashed. It uses the latest line of each
// arrangement, N and phase.
//
//	go run ./scripts/bench/002chart [RESULTS.tsv [OUT.png]]
//
// Defaults: docs/bench/002/results.tsv and docs/img/002-aggregate.png.
package main

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// arrangement is one line of the chart.
type arrangement struct {
	key, label string
	color      color.RGBA
}

var arrangements = []arrangement{
	{"gfarm", "Gfarm-like (every client host a node)", color.RGBA{27, 120, 55, 255}},
	{"pvfs", "PVFS-like (2 server hosts)", color.RGBA{33, 102, 172, 255}},
	{"s3fs", "S3FS-like (s3fs through the front door)", color.RGBA{178, 24, 43, 255}},
}

// results maps arrangement and phase to MB/s by N (the latest line wins).
type results map[[2]string]map[int]float64

func read(file string) (results, error) {
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
	res := results{}
	for _, row := range rows[1:] {
		n, err1 := strconv.Atoi(row[col["clients"]])
		v, err2 := strconv.ParseFloat(row[col["MB_per_s"]], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: bad line %q", file, strings.Join(row, " "))
		}
		k := [2]string{row[col["arrangement"]], row[col["phase"]]}
		if res[k] == nil {
			res[k] = map[int]float64{}
		}
		res[k][n] = v
	}
	return res, nil
}

func points(m map[int]float64) plotter.XYs {
	ns := make([]int, 0, len(m))
	for n := range m {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	var xy plotter.XYs
	for _, n := range ns {
		xy = append(xy, plotter.XY{X: float64(n), Y: m[n]})
	}
	return xy
}

// panel draws one phase's chart.
func panel(res results, phase string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = phase + "s: aggregate MB/s"
	p.X.Label.Text = "client hosts (N)"
	p.Y.Label.Text = "MB/s"
	p.Y.Min, p.X.Min = 0, 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	var ticks []plot.Tick
	for _, a := range arrangements {
		m := res[[2]string{a.key, phase}]
		if len(m) == 0 {
			continue
		}
		for n := range m {
			if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Value == float64(n) }) {
				ticks = append(ticks, plot.Tick{Value: float64(n), Label: strconv.Itoa(n)})
			}
		}
		l, s, err := plotter.NewLinePoints(points(m))
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = a.color, vg.Points(2)
		s.Color, s.Shape = a.color, draw.CircleGlyph{}
		p.Add(l, s)
		p.Legend.Add(a.label, l, s)
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	defer func() { p.Y.Max *= 1.3 }() // room for the legend above the lines
	if one, ok := res[[2]string{"gfarm", phase}][1]; ok {
		target := map[int]float64{0: 0}
		for _, t := range ticks {
			target[int(t.Value)] = 0.9 * t.Value * one
		}
		l, err := plotter.NewLine(points(target))
		if err != nil {
			return nil, err
		}
		l.Color, l.Dashes = color.Gray{Y: 120}, []vg.Length{vg.Points(5), vg.Points(4)}
		p.Add(l)
		p.Legend.Add("target: 0.9 × N × one Gfarm-like client", l)
	}
	return p, nil
}

func run(in, out string) error {
	if filepath.Ext(out) != ".png" {
		return fmt.Errorf("%s: want a .png file", out)
	}
	res, err := read(in)
	if err != nil {
		return err
	}
	const w, h = 16 * vg.Centimeter, 12 * vg.Centimeter
	img := vgimg.New(2*w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Centimeter, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	canvases := plot.Align([][]*plot.Plot{make([]*plot.Plot, 2)}, tiles, dc)
	for i, phase := range []string{"write", "read"} {
		p, err := panel(res, phase)
		if err != nil {
			return err
		}
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}

func main() {
	in, out := "docs/bench/002/results.tsv", "docs/img/002-aggregate.png"
	if len(os.Args) > 1 {
		in = os.Args[1]
	}
	if len(os.Args) > 2 {
		out = os.Args[2]
	}
	if err := run(in, out); err != nil {
		fmt.Fprintln(os.Stderr, "002chart:", err)
		os.Exit(1)
	}
	fmt.Println(out)
}
