package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"math"
	"strings"
	"testing"
	"time"
)

// connParams loads front's /page count times from 2 clients, polling nodes.
func connParams(front *frontDoor, count int64, nodes ...*pageNode) Params {
	p := Params{URL: front.srv.URL + "/page", Clients: 2, Policy: "round-robin",
		Load: Load{Count: count, Timeout: 10 * time.Second}}
	for _, n := range nodes {
		p.Nodes = append(p.Nodes, n.host())
	}
	if len(p.Nodes) == 0 {
		p.Nodes = []string{front.host()}
	}
	return p
}

// TestConnRateRedirected: a front door redirects each request to one of two
// nodes in turn; every request and every hop must use a new connection.
func TestConnRateRedirected(t *testing.T) {
	for _, tt := range []struct {
		name string
		rate float64 // 0: closed loop
	}{
		{"closed loop", 0},
		{"open loop", 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newPageNode(t, 0.5, 1, ""), newPageNode(t, 0.25, 2, "")
			front := newFrontDoor(t, "", a, b)
			p := connParams(front, 20, a, b)
			p.Load.Rate = tt.rate
			rep, err := RunConnRate(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Groups) != 1 || rep.Scenario != "conn-rate" || rep.URL != p.URL || rep.Metric != MetricOpsPerSec {
				t.Fatalf("%+v", rep)
			}
			g := rep.Groups[0]
			r := g.Runs[0]
			if g.Series != "round-robin" || r.Requests != 20 || r.OK != 20 || r.Errors != 0 || r.OpsPerSec <= 0 ||
				r.Bytes != 20*int64(len(pageBody)) || r.Latency.Count != 20 {
				t.Fatalf("run %+v", r)
			}
			c := g.Conn
			if c == nil || c.Redirects != 20 || !maps.Equal(c.FinalHosts, map[string]int64{a.host(): 10, b.host(): 10}) ||
				c.Reply.Count != 20 || c.Connect.Count != 20 || c.Connection.Count != 20 {
				t.Fatalf("conn times %+v", c)
			}
			if c.Connection.Max < c.Reply.Max || c.Reply.Mean <= 0 || c.Connect.Mean <= 0 {
				t.Fatalf("inconsistent times %+v", c)
			}
			for name, s := range map[string]*connServer{"front": front.connServer, "a": a.connServer, "b": b.connServer} {
				want := 20
				if s != front.connServer {
					want = 10
				}
				if reqs, conns, most := s.pageRequests(); reqs != want || conns != want || most != 1 {
					t.Errorf("%s: %d page requests on %d connections (at most %d on one), want %d on as many", name, reqs, conns, most, want)
				}
			}
			if n := front.accepted.Load(); n != 20 {
				t.Errorf("front accepted %d connections, want 20", n)
			}
			checkCPUPlumbing(t, r.CPU, g.CPU, []*pageNode{a, b})
		})
	}
}

// checkCPUPlumbing checks that the nodes were polled and their figures
// recorded; the arithmetic is TestCPUUsage's.
func checkCPUPlumbing(t *testing.T, u *CPUUsage, sum *CPUSummary, nodes []*pageNode) {
	t.Helper()
	if u == nil || u.Polls < 2 || u.Failed != 0 || len(u.Nodes) != len(nodes) || len(u.Samples) != u.Polls-1 || u.Interval != 0.5 {
		t.Fatalf("cpu %+v", u)
	}
	for i, n := range u.Nodes {
		if n.Node != nodes[i].host() || n.Quota != nodes[i].quota || len(n.Points) != u.Polls-1 || n.Mean <= 0 {
			t.Errorf("node %d: %+v", i, n)
		}
		if polled := nodes[i].polls.Load(); polled != int64(u.Polls) {
			t.Errorf("node %d polled %d times, %d polls recorded", i, polled, u.Polls)
		}
	}
	for _, s := range u.Samples {
		if s.Nodes != len(nodes) || s.Min > s.Avg || s.Avg > s.Max || s.Min <= 0 {
			t.Errorf("sample %+v", s)
		}
	}
	if sum == nil || len(sum.Nodes) != len(nodes) || sum.Low > sum.Avg || sum.Avg > sum.High || sum.SampleMin > sum.SampleMax {
		t.Errorf("summary %+v", sum)
	}
}

// TestConnRateErrors: each failure is counted under its kind, and the
// times of failed requests are left out.
func TestConnRateErrors(t *testing.T) {
	for _, tt := range []struct {
		name   string
		fail   string // the node's
		loop   string // the front door's
		length int64
		sum    string
		kind   string
	}{
		{"node answers 500", "500", "", 0, "", "http_500"},
		{"short body", "short", "", 0, "", KindLength},
		{"wrong length", "", "", int64(len(pageBody)) + 1, "", KindLength},
		{"wrong content", "", "", int64(len(pageBody)), strings.Repeat("ab", 32), KindContent},
		{"empty body", "empty", "", 0, "", KindEmpty},
		{"redirect to itself", "", "self", 0, "", KindRedirect},
		{"endless redirects", "", "chain", 0, "", KindRedirect},
		{"node never answers", "hang", "", 0, "", KindTimeout},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := newPageNode(t, 0.1, 0, tt.fail)
			front := newFrontDoor(t, tt.loop, n)
			p := connParams(front, 6, n)
			p.Length, p.SHA256 = tt.length, tt.sum
			if tt.fail == "hang" {
				p.Load.Timeout = 20 * time.Millisecond
			}
			rep, err := RunConnRate(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			g := rep.Groups[0]
			if g.Requests != 6 || g.Errors != 6 || !maps.Equal(g.ErrorKinds, map[string]int64{tt.kind: 6}) {
				t.Fatalf("%d requests, %d errors %v; want 6 %s", g.Requests, g.Errors, g.ErrorKinds, tt.kind)
			}
			if g.Conn.Reply.Count != 0 || len(g.Conn.FinalHosts) != 0 {
				t.Fatalf("failed requests timed: %+v", g.Conn)
			}
			if tt.loop == "chain" {
				if reqs, _, most := front.pageRequests(); reqs != 6*maxHops || most != 1 {
					t.Fatalf("front served %d hops (at most %d per connection), want %d", reqs, most, 6*maxHops)
				}
			}
		})
	}
}

// TestConnRateProxied: a front door that serves the page itself (proxy
// mode): no redirect, every request lands on it.
func TestConnRateProxied(t *testing.T) {
	front := newFrontDoor(t, "")
	p := connParams(front, 8)
	p.Policy, p.Length = "", int64(len(pageBody))
	sum := sha256.Sum256([]byte(pageBody)) // every body checked whole
	p.SHA256 = hex.EncodeToString(sum[:])
	rep, err := RunConnRate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	g := rep.Groups[0]
	if g.Series != "GET" || g.Runs[0].OK != 8 || g.Conn.Redirects != 0 || !maps.Equal(g.Conn.FinalHosts, map[string]int64{front.host(): 8}) {
		t.Fatalf("%+v %+v", g, g.Conn)
	}
	// the front door is no node: its /status is a 404, counted as failed polls
	if cpu := g.Runs[0].CPU; cpu == nil || cpu.Failed != cpu.Polls || len(cpu.Samples) != 0 || g.CPU != nil {
		t.Fatalf("cpu %+v, summary %+v", cpu, g.CPU)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, rep); err != nil || !strings.Contains(buf.String(), "cpu GET: no figure, 2 of 2 polls of the nodes' /status failed") {
		t.Fatalf("%v\n%s", err, buf.String())
	}
}

// TestConnRateWarmupLeftOut: requests of the warm-up count neither in the
// runner's figures nor in the connection times.
func TestConnRateWarmupLeftOut(t *testing.T) {
	n := newPageNode(t, 0.1, 1, "")
	front := newFrontDoor(t, "", n)
	p := connParams(front, 10, n)
	p.Clients, p.Load.Warmup = 1, 50*time.Millisecond
	rep, err := RunConnRate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	g := rep.Groups[0]
	served, _, _ := n.pageRequests()
	if g.Requests != 10 || g.Conn.Reply.Count != 10 || g.Conn.FinalHosts[n.host()] != 10 || served <= 10 {
		t.Fatalf("%d measured, %d timed, node served %d (warm-up included)", g.Requests, g.Conn.Reply.Count, served)
	}
}

func TestConnRateBadParams(t *testing.T) {
	n := newPageNode(t, 0.1, 1, "")
	front := newFrontDoor(t, "", n)
	for _, tt := range []struct {
		name string
		edit func(*Params)
	}{
		{"no URL", func(p *Params) { p.URL = "" }},
		{"relative URL", func(p *Params) { p.URL = "/page" }},
		{"not http", func(p *Params) { p.URL = "ftp://" + front.host() + "/page" }},
		{"negative length", func(p *Params) { p.Length = -1 }},
		{"no node", func(p *Params) { p.Nodes = nil }},
		{"no bound", func(p *Params) { p.Load.Count = 0 }},
		{"setup phase", func(p *Params) { p.Phase = "setup" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := connParams(front, 1, n)
			tt.edit(&p)
			if _, err := RunConnRate(context.Background(), p); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if served, _, _ := front.pageRequests(); served != 0 {
		t.Fatalf("bad parameters still loaded the front door %d times", served)
	}
}

// TestConnRateDistributed: two generators share the clients and the rate;
// only the coordinator polls the nodes; the merged run holds both
// generators' requests and times.
func TestConnRateDistributed(t *testing.T) {
	a, b := newPageNode(t, 0.5, 1, ""), newPageNode(t, 0.5, 1, "")
	front := newFrontDoor(t, "", a, b)
	p := connParams(front, 6, a, b)
	p.Clients, p.Load.Rate, p.Reps = 3, 300, 2
	var jobs []Params
	jobsc := make(chan Params, 4)
	worker := func(ctx context.Context, job Params) (*Report, error) {
		jobsc <- job
		return jsonWorker(t)(ctx, job)
	}
	rep, err := RunConnRateDistributed(context.Background(), p, []Worker{worker, worker})
	if err != nil {
		t.Fatal(err)
	}
	close(jobsc)
	for j := range jobsc {
		jobs = append(jobs, j)
	}
	if len(jobs) != 4 {
		t.Fatalf("%d jobs, want 2 generators × 2 reps", len(jobs))
	}
	for _, j := range jobs {
		if j.Nodes != nil || j.Phase != "run" || j.Scenario != "conn-rate" || j.StartAt.IsZero() ||
			j.Load.Rate != 300*float64(j.Clients)/3 {
			t.Fatalf("job %+v", j)
		}
	}
	g := rep.Groups[0]
	if len(g.Runs) != 2 || g.Requests != 2*2*6 || g.Errors != 0 || g.Conn.Reply.Count != 24 || g.Conn.Redirects != 24 {
		t.Fatalf("%+v %+v", g, g.Conn)
	}
	for _, r := range g.Runs {
		if r.Clients != 3 || r.Rate != 300 || r.OK != 12 || r.Conn == nil || r.Conn.Reply.Count != 12 {
			t.Fatalf("merged run %+v", r)
		}
		// (how many polls fit in the run is up to the scheduler: the
		// coordinator's first one waits for the common start)
		if r.CPU == nil || len(r.CPU.Nodes) != 2 {
			t.Fatalf("coordinator's cpu %+v", r.CPU)
		}
	}
	if reqs, conns, most := front.pageRequests(); reqs != 24 || conns != 24 || most != 1 {
		t.Fatalf("front: %d requests on %d connections (at most %d)", reqs, conns, most)
	}
}

// TestCPUUsage checks the arithmetic on made-up readings: two nodes, one
// with a 2-core quota, one without (percent of one core); a failed poll
// and a restarted node.
func TestCPUUsage(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ok := func(ms int, cpu, quota float64) cpuReading {
		return cpuReading{ok: true, at: at(ms), cpu: cpu, quota: quota}
	}
	readings := [][]cpuReading{
		{ok(0, 10, 2), ok(0, 5, 0)},
		{ok(500, 10.5, 2), ok(500, 5.25, 0)},  // a: 0.5 s of 2 cores in 0.5 s = 50%; b: 50% of a core
		{ok(1000, 12.5, 2), {}},               // a: 2 s in 0.5 s = 4 cores, 200% of its quota; b's poll failed
		{ok(1500, 13, 2), ok(1500, 5.75, 0)},  // b's interval spans the failed poll: 0.5 s in 1 s = 50%
		{ok(2000, 13.5, 2), ok(2000, 0.1, 0)}, // b restarted: its counter went back, interval left out
	}
	u := cpuUsage([]string{"a", "b"}, t0, 500*time.Millisecond, readings)
	wantA := []CPUPoint{{0.5, 50}, {1, 200}, {1.5, 50}, {2, 50}}
	wantB := []CPUPoint{{0.5, 50}, {1.5, 50}}
	if !equalPoints(u.Nodes[0].Points, wantA) || !equalPoints(u.Nodes[1].Points, wantB) {
		t.Fatalf("points a %v, b %v", u.Nodes[0].Points, u.Nodes[1].Points)
	}
	// a: 3.5 s over 2 s of 2 cores; b: 0.75 s over 1.5 s of one core
	if !near(u.Nodes[0].Mean, 87.5) || !near(u.Nodes[1].Mean, 50) || u.Nodes[0].Quota != 2 || u.Nodes[1].Quota != 0 {
		t.Fatalf("nodes %+v", u.Nodes)
	}
	if u.Polls != 5 || u.Failed != 1 || len(u.Samples) != 4 {
		t.Fatalf("%+v", u)
	}
	wantS := []CPUSpread{{0.5, 50, 50, 50, 2}, {1, 200, 200, 200, 1}, {1.5, 50, 50, 50, 2}, {2, 50, 50, 50, 1}}
	for i, s := range u.Samples {
		if s != wantS[i] {
			t.Fatalf("sample %d: %+v, want %+v", i, s, wantS[i])
		}
	}
	sum := summarizeCPU([]*Result{{CPU: u}, {CPU: u}, {}})
	if sum == nil || len(sum.Nodes) != 2 || !near(sum.Low, 50) || !near(sum.High, 87.5) || !near(sum.Avg, 68.75) ||
		!near(sum.SampleMax, 87.5) || !near(sum.SampleMin, 87.5) {
		t.Fatalf("summary %+v", sum)
	}
	if summarizeCPU([]*Result{{}}) != nil {
		t.Fatal("summary of no samples")
	}
}

func equalPoints(a, b []CPUPoint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !near(a[i].T, b[i].T) || !near(a[i].Pct, b[i].Pct) {
			return false
		}
	}
	return true
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
