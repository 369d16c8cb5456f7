package history

import (
	"encoding/json"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"
)

func pt(t int64, cpu float32) Point {
	p := Unknown(t)
	p.V[CPU] = cpu
	return p
}

func times(ps []Point) []int64 {
	var ts []int64
	for _, p := range ps {
		ts = append(ts, p.T)
	}
	return ts
}

func TestRing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cap   int
		add   []int64
		since int64
		want  []int64
	}{
		{"empty", 3, nil, 0, nil},
		{"in order", 3, []int64{1, 2, 3}, 0, []int64{1, 2, 3}},
		{"since the middle", 4, []int64{1, 2, 3, 4}, 2, []int64{3, 4}},
		{"since the end", 4, []int64{1, 2}, 2, nil},
		{"full drops the oldest", 3, []int64{1, 2, 3, 4, 5}, 0, []int64{3, 4, 5}},
		{"wrapped, since inside", 3, []int64{1, 2, 3, 4, 5, 6, 7}, 5, []int64{6, 7}},
		{"older and equal points ignored", 3, []int64{5, 3, 5, 6}, 0, []int64{5, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRing(tc.cap)
			for _, ts := range tc.add {
				r.Add(pt(ts, 0))
			}
			if got := times(r.Since(tc.since)); !slices.Equal(got, tc.want) {
				t.Errorf("Since(%d) = %v, want %v", tc.since, got, tc.want)
			}
			if r.Len() > r.Cap() {
				t.Errorf("Len %d over Cap %d", r.Len(), r.Cap())
			}
		})
	}
}

func TestSeriesCoarse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		points  []Point
		wantT   []int64
		field   int
		wantV   []float32
		wantNaN bool
	}{
		{name: "mean of a minute", points: []Point{pt(60, 0.2), pt(61, 0.4), pt(119, 0.6), pt(120, 1)},
			wantT: []int64{60}, field: CPU, wantV: []float32{0.4}},
		{name: "two minutes, a gap between", points: []Point{pt(0, 1), pt(30, 3), pt(200, 5), pt(300, 0)},
			wantT: []int64{0, 180}, field: CPU, wantV: []float32{2, 5}},
		{name: "unknown seconds left out of the mean", points: []Point{pt(0, 1), Unknown(1), pt(2, 3), pt(60, 0)},
			wantT: []int64{0}, field: CPU, wantV: []float32{2}},
		{name: "all unknown stays unknown", points: []Point{Unknown(0), Unknown(1), Unknown(60)},
			wantT: []int64{0}, field: CPU, wantNaN: true},
		{name: "p99 keeps the minute's largest", points: func() []Point {
			var ps []Point
			for i, v := range []float32{1, 9, 2, 3} {
				p := Unknown(int64(i))
				p.V[P99] = v
				ps = append(ps, p)
			}
			return append(ps, Unknown(60))
		}(), wantT: []int64{0}, field: P99, wantV: []float32{9}},
		{name: "the open minute is not coarse yet", points: []Point{pt(0, 1), pt(59, 1)}, wantT: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSeries()
			for _, p := range tc.points {
				s.Add(p)
			}
			_, coarse := s.Since(-1, -1)
			if got := times(coarse); !slices.Equal(got, tc.wantT) {
				t.Fatalf("coarse times %v, want %v", got, tc.wantT)
			}
			for i, p := range coarse {
				v := p.V[tc.field]
				if tc.wantNaN {
					if !math.IsNaN(float64(v)) {
						t.Errorf("point %d: %v, want unknown", i, v)
					}
				} else if math.Abs(float64(v-tc.wantV[i])) > 1e-6 {
					t.Errorf("point %d: %v, want %v", i, v, tc.wantV[i])
				}
			}
		})
	}
}

// TestSeriesBounded fills a series for more than a day and checks that it
// holds no more than its hour of seconds and day of minutes, and that its
// memory is what SeriesBytes says.
func TestSeriesBounded(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := NewSeries()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("a series takes %d bytes on the heap (SeriesBytes: %d)", grew, SeriesBytes)
	if grew < SeriesBytes*9/10 || grew > SeriesBytes*11/10 {
		t.Errorf("a series takes %d bytes, SeriesBytes says %d", grew, SeriesBytes)
	}
	for ts := int64(0); ts < 26*3600; ts++ {
		s.Add(pt(ts, 0.5))
	}
	fine, coarse := s.Len()
	if fine != FineKeep || coarse != CoarseKeep {
		t.Errorf("held %d fine and %d coarse points, want %d and %d", fine, coarse, FineKeep, CoarseKeep)
	}
	if last, _ := s.Last(); last.T != 26*3600-1 {
		t.Errorf("last point at %d", last.T)
	}
	runtime.KeepAlive(s)
}

func TestSetBounded(t *testing.T) {
	s := NewSet(3)
	for _, id := range []string{"a", "b", "c"} {
		s.Series(id).Add(pt(1, 0))
	}
	s.Series("a") // a is used again: b is now the least recent
	s.Series("d") // evicts b
	s.Lookup("c") // a lookup does not count as a use
	s.Series("e") // evicts c
	if got := s.Nodes(); !slices.Equal(got, []string{"a", "d", "e"}) {
		t.Errorf("nodes %v, want [a d e]", got)
	}
}

func TestDumpRoundTrip(t *testing.T) {
	s := NewSet(0)
	a := s.Series("a")
	for ts := int64(0); ts < 125; ts++ {
		p := pt(ts, float32(ts)/1000)
		p.V[DiskUsed] = 1 << 30
		a.Add(p)
	}
	s.Series("b").Add(Unknown(7))
	b, err := json.Marshal(s.Dump(100))
	if err != nil {
		t.Fatal(err)
	}
	var d Dump
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if got := times(d.Nodes["a"].Fine); len(got) != 24 || got[0] != 101 {
		t.Errorf("a's fine points after 100: %v", got)
	}
	if got := times(d.Nodes["a"].Coarse); len(got) != 0 { // minutes 0 and 60 closed, both before 100
		t.Errorf("a's coarse points after 100: %v", got)
	}
	if got := times(s.Dump(30).Nodes["a"].Coarse); !slices.Equal(got, []int64{60}) {
		t.Errorf("a's coarse points after 30: %v, want [60]", got)
	}
	last := d.Nodes["a"].Fine[23]
	if last.V[CPU] != float32(124)/1000 || last.V[DiskUsed] != 1<<30 || last.Known(P99) {
		t.Errorf("last point decoded as %+v", last)
	}
	if p := d.Nodes["b"].Fine; len(p) != 0 {
		t.Errorf("b's points after 100: %v", p)
	}
}

// TestDumpOtherFields reads a dump from a node with other fields: known
// names are mapped, unknown ones dropped, missing ones unknown.
func TestDumpOtherFields(t *testing.T) {
	in := `{"fields":["future_thing","p99_ms","cpu"],"nodes":{"x":{"fine":[[5,7,12.5,null]],"coarse":[]}}}`
	var d Dump
	if err := json.Unmarshal([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	p := d.Nodes["x"].Fine[0]
	if p.T != 5 || p.V[P99] != 12.5 || p.Known(CPU) || p.Known(Mem) {
		t.Errorf("decoded %+v", p)
	}
	for _, bad := range []string{`{"nodes":{"x":{"fine":[[]]}}}`, `{"nodes":{"x":{"fine":[[null,1]]}}}`, `[`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("%s: decoded without an error", bad)
		}
	}
}

func TestRequests(t *testing.T) {
	for _, tc := range []struct {
		name             string
		durations        []time.Duration
		statuses         []int
		rate, errs       float64
		p50, p99         float64 // ms; the bucket's upper bound is within 25% above
		unknownQuantiles bool
	}{
		{name: "none", unknownQuantiles: true},
		{name: "all fast", durations: repeat(100, time.Millisecond), rate: 100, p50: 1, p99: 1},
		{name: "a slow tail", durations: append(repeat(98, time.Millisecond), repeat(2, 200*time.Millisecond)...),
			rate: 100, p50: 1, p99: 200},
		{name: "errors", durations: repeat(4, 10*time.Millisecond), statuses: []int{500, 503, 404, 200}, rate: 4, errs: 2, p50: 10, p99: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Requests
			start := time.Unix(1000, 0)
			r.Take(start)
			for i, d := range tc.durations {
				code := 200
				if i < len(tc.statuses) {
					code = tc.statuses[i]
				}
				r.Observe(d, code)
			}
			s := r.Take(start.Add(time.Second))
			if s.Rate != tc.rate || s.Errors != tc.errs {
				t.Errorf("rate %v errors %v, want %v %v", s.Rate, s.Errors, tc.rate, tc.errs)
			}
			if tc.unknownQuantiles {
				if !math.IsNaN(s.P50) || !math.IsNaN(s.P99) {
					t.Errorf("quantiles %v %v without requests", s.P50, s.P99)
				}
				return
			}
			for _, q := range []struct{ got, want float64 }{{s.P50, tc.p50}, {s.P99, tc.p99}} {
				if q.got < q.want || q.got > q.want*growth {
					t.Errorf("quantile %v ms, want %v ms (+25%%)", q.got, q.want)
				}
			}
			if again := r.Take(start.Add(2 * time.Second)); again.Rate != 0 {
				t.Errorf("a second Take counted %v again", again.Rate)
			}
		})
	}
}

func repeat(n int, d time.Duration) []time.Duration { return slices.Repeat([]time.Duration{d}, n) }

func TestRater(t *testing.T) {
	at := func(s float64) time.Time { return time.Unix(0, 0).Add(time.Duration(s * float64(time.Second))) }
	reading := func(s, cpu, rx, conns float64) Reading {
		r := Reading{At: at(s)}
		for i := range r.V {
			r.V[i] = math.NaN()
		}
		r.V[CPU], r.V[NetRx], r.V[Conns] = cpu, rx, conns
		return r
	}
	var ra Rater
	for _, tc := range []struct {
		name    string
		r       Reading
		cpu, rx float64 // NaN: unknown
		conns   float32
		wantT   int64
	}{
		{"first: rates unknown", reading(10, 5, 1e12, 3), math.NaN(), math.NaN(), 3, 10},
		{"a second later", reading(11, 5.5, 1e12+1e6, 4), 0.5, 1e6, 4, 11},
		{"half a second later", reading(11.5, 5.75, 1e12+2e6, 4), 0.5, 2e6, 4, 12},
		{"a counter went back", reading(12.5, 1, 1e12+3e6, 2), math.NaN(), 1e6, 2, 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ra.Point(tc.r)
			if p.T != tc.wantT || p.V[Conns] != tc.conns {
				t.Errorf("T %d conns %v, want %d %v", p.T, p.V[Conns], tc.wantT, tc.conns)
			}
			for _, f := range []struct {
				i    int
				want float64
			}{{CPU, tc.cpu}, {NetRx, tc.rx}} {
				got := float64(p.V[f.i])
				if math.IsNaN(f.want) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-f.want) > f.want*1e-6 {
					t.Errorf("%s = %v, want %v", Fields[f.i].Name, got, f.want)
				}
			}
		})
	}
}
