//go:build ignore

// 004-chart draws paper 004's figures from scripts/bench/004.sh's records
// and prints the summary table of docs/benchmarks.md (004):
//
//	go run scripts/bench/004-chart.go docs/bench/004 docs/img
//
// Per configuration directory (SERVERS-POLICY): status.jsonl (each server's
// /status every second) and starts.csv (each application's start time and
// the users logged in then). Charts: 004-cpu.png, 004-memory.png,
// 004-load.png (per node over time) and 004-start.png (start time as users
// grow, with the "usable" threshold: 3× the 1-user figure of 1 server).
package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

type point struct {
	T    int64  `json:"t"`
	Addr string `json:"addr"`
	Host struct {
		CPUSeconds  float64 `json:"cpu_seconds"`
		CPUQuota    float64 `json:"cpu_quota_cores"`
		Memory      int64   `json:"memory_bytes"`
		MemoryLimit int64   `json:"memory_limit_bytes"`
		PageCache   int64   `json:"page_cache_bytes"`
	} `json:"host"`
	Load *struct {
		RunQueue float64 `json:"r"`
	} `json:"load"`
}

type series struct {
	name          string
	cpu, mem, rq  plotter.XYs // seconds since the run's start → percent
	meanCPU, mean float64
}

type start struct {
	t      int64
	what   string
	ms     float64
	logged int
}

type config struct {
	name   string
	nodes  []*series
	starts []start
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run scripts/bench/004-chart.go RECORDS_DIR IMG_DIR")
		os.Exit(2)
	}
	dirs, _ := filepath.Glob(filepath.Join(os.Args[1], "*-*"))
	var cfgs []*config
	for _, d := range dirs {
		c, err := load(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		cfgs = append(cfgs, c)
	}
	sort.Slice(cfgs, func(i, j int) bool { return cfgs[i].name < cfgs[j].name })
	if len(cfgs) == 0 {
		fmt.Fprintln(os.Stderr, "no records")
		os.Exit(1)
	}
	img := os.Args[2]
	must(timeChart(filepath.Join(img, "004-cpu.png"), "CPU used, % of the server's quota (5 s mean)", cfgs, func(s *series) plotter.XYs { return s.cpu }))
	must(timeChart(filepath.Join(img, "004-memory.png"), "memory used (page cache not counted), % of the server's limit", cfgs, func(s *series) plotter.XYs { return s.mem }))
	must(timeChart(filepath.Join(img, "004-load.png"), "CPU pressure: % of quota periods throttled (5 s mean)", cfgs, func(s *series) plotter.XYs { return s.rq }))
	base := baseline(cfgs)
	must(startChart(filepath.Join(img, "004-start.png"), cfgs, 3*base))
	summary(cfgs, base)
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func load(dir string) (*config, error) {
	c := &config{name: filepath.Base(dir)}
	f, err := os.Open(filepath.Join(dir, "status.jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byAddr := map[string][]point{}
	var t0 int64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var p point
		if json.Unmarshal(sc.Bytes(), &p) != nil || p.Addr == "" {
			continue
		}
		if t0 == 0 || p.T < t0 {
			t0 = p.T
		}
		byAddr[p.Addr] = append(byAddr[p.Addr], p)
	}
	addrs := make([]string, 0, len(byAddr))
	for a := range byAddr {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	for i, a := range addrs {
		s := &series{name: fmt.Sprintf("%s s%d", c.name, i+1)}
		ps := byAddr[a]
		for j := 1; j < len(ps); j++ {
			p, q := ps[j-1], ps[j]
			x := float64(q.T-t0) / 1000
			if dt := float64(q.T-p.T) / 1000; dt > 0 && q.Host.CPUQuota > 0 {
				s.cpu = append(s.cpu, plotter.XY{X: x, Y: 100 * (q.Host.CPUSeconds - p.Host.CPUSeconds) / dt / q.Host.CPUQuota})
			}
			if q.Host.MemoryLimit > 0 {
				s.mem = append(s.mem, plotter.XY{X: x, Y: 100 * float64(q.Host.Memory-q.Host.PageCache) / float64(q.Host.MemoryLimit)})
			}
			if q.Load != nil {
				s.rq = append(s.rq, plotter.XY{X: x, Y: 100 * q.Load.RunQueue})
			}
		}
		s.cpu, s.rq = smooth(s.cpu, 5), smooth(s.rq, 5)
		c.nodes = append(c.nodes, s)
	}
	sf, err := os.Open(filepath.Join(dir, "starts.csv"))
	if err != nil {
		return nil, err
	}
	defer sf.Close()
	rows, err := csv.NewReader(sf).ReadAll()
	if err != nil {
		return nil, err
	}
	for _, r := range rows[1:] {
		t, _ := strconv.ParseInt(r[0], 10, 64)
		v, _ := strconv.ParseFloat(r[3], 64)
		n, _ := strconv.Atoi(r[4])
		c.starts = append(c.starts, start{t: t, what: r[2], ms: v, logged: n})
	}
	return c, nil
}

func timeChart(file, ylabel string, cfgs []*config, pick func(*series) plotter.XYs) error {
	p := plot.New()
	p.Y.Label.Text = ylabel
	p.X.Label.Text = "seconds since the first user logged in"
	p.Legend.Top = true
	p.Y.Min = 0
	i := 0
	for _, c := range cfgs {
		for _, s := range c.nodes {
			xy := pick(s)
			if len(xy) == 0 {
				continue
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			l.Color = plotutil.Color(i)
			l.Dashes = plotutil.Dashes(i / 7)
			l.Width = vg.Points(1.2)
			p.Add(l)
			p.Legend.Add(s.name, l)
			i++
		}
	}
	return p.Save(9*vg.Inch, 4.5*vg.Inch, file)
}

// baseline is the median application start time with one user logged in
// on one server (the first configuration if none has one server).
func baseline(cfgs []*config) float64 {
	for _, c := range cfgs {
		if strings.HasPrefix(c.name, "1-") {
			if m := median(c, 1); m > 0 {
				return m
			}
		}
	}
	return median(cfgs[0], 1)
}

// median is the median start time of applications started while n users
// were logged in (0: none).
func median(c *config, n int) float64 {
	var v []float64
	for _, s := range c.starts {
		if s.logged == n && s.what != "resume" && s.ms >= 0 {
			v = append(v, s.ms)
		}
	}
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// usable is the most users for which every count up to it has its median
// application start under limit.
func usable(c *config, limit float64) int {
	top := 0
	for _, s := range c.starts {
		top = max(top, s.logged)
	}
	for n := 1; n <= top; n++ {
		if m := median(c, n); m == 0 || m >= limit {
			return n - 1
		}
	}
	return top
}

func startChart(file string, cfgs []*config, limit float64) error {
	p := plot.New()
	p.Y.Label.Text = "application start time, ms"
	p.X.Label.Text = "users logged in"
	p.Legend.Top = true
	p.Y.Min = 0
	maxX := 1.0
	for i, c := range cfgs {
		var pts plotter.XYs
		for _, s := range c.starts {
			if s.what != "resume" && s.ms >= 0 {
				pts = append(pts, plotter.XY{X: float64(s.logged) + 0.15*float64(i-1), Y: s.ms})
				maxX = max(maxX, float64(s.logged))
			}
		}
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.Color = plotutil.Color(i)
		sc.Shape = plotutil.Shape(i)
		p.Add(sc)
		p.Legend.Add(c.name, sc)
	}
	th, err := plotter.NewLine(plotter.XYs{{X: 0.5, Y: limit}, {X: maxX + 0.5, Y: limit}})
	if err != nil {
		return err
	}
	th.Color = color.RGBA{R: 200, A: 255}
	th.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(th)
	p.Legend.Add(fmt.Sprintf("usable: under 3× the 1-user figure (%.0f ms)", limit), th)
	return p.Save(9*vg.Inch, 4.5*vg.Inch, file)
}

// summary prints per configuration: the usable users, and the nodes'
// mean CPU and memory over the second half of the run, and their spread.
func summary(cfgs []*config, base float64) {
	fmt.Printf("1-user start time (1 server, median): %.0f ms; usable: under %.0f ms\n\n", base, 3*base)
	fmt.Println("| configuration | usable users | starts (failed) | mean CPU % per node | CPU spread | mean memory % per node | memory spread | median resume ms |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, c := range cfgs {
		var cpus, mems []float64
		for _, s := range c.nodes {
			cpus = append(cpus, secondHalfMean(s.cpu))
			mems = append(mems, secondHalfMean(s.mem))
		}
		failed, n := 0, 0
		var res []float64
		for _, s := range c.starts {
			switch {
			case s.what == "resume":
				res = append(res, s.ms)
			case s.ms < 0:
				failed++
			default:
				n++
			}
		}
		slices.Sort(res)
		mr := 0.0
		if len(res) > 0 {
			mr = res[len(res)/2]
		}
		fmt.Printf("| %s | %d | %d (%d) | %s | %.1f | %s | %.1f | %.0f |\n", c.name, usable(c, 3*base), n, failed,
			fmtAll(cpus), spread(cpus), fmtAll(mems), spread(mems), mr)
	}
}

func secondHalfMean(xy plotter.XYs) float64 {
	if len(xy) == 0 {
		return 0
	}
	h := xy[len(xy)/2:]
	sum := 0.0
	for _, p := range h {
		sum += p.Y
	}
	return sum / float64(len(h))
}

func spread(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	return slices.Max(v) - slices.Min(v)
}

func fmtAll(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, " / ")
}

// smooth is the moving mean of the last n points (per-second CPU figures
// jump with the quota's periods).
func smooth(xy plotter.XYs, n int) plotter.XYs {
	out := make(plotter.XYs, len(xy))
	for i := range xy {
		lo, sum := max(0, i-n+1), 0.0
		for _, p := range xy[lo : i+1] {
			sum += p.Y
		}
		out[i] = plotter.XY{X: xy[i].X, Y: sum / float64(i+1-lo)}
	}
	return out
}
