package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

func tinyIO(nodes []string, ops, sets []string) Params {
	return Params{
		Nodes: nodes, Clients: 2, Files: 3, Sizes: []int64{1 << 10, 4 << 10},
		Ops: ops, Sets: sets, Reps: 1, Load: Load{Count: 20},
	}
}

func TestReplicatedIOOwnSets(t *testing.T) {
	a, b := newFakeNode(t), newFakeNode(t)
	rep, err := RunReplicatedIO(context.Background(), tinyIO([]string{a.addr(), b.addr()}, []string{"read", "write"}, []string{"own"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) != 4 || rep.Metric != MetricMBPerSec || rep.Files != 3 || rep.Clients != 2 {
		t.Fatalf("%+v", rep)
	}
	for _, g := range rep.Groups {
		r := g.Runs[0]
		if len(g.Runs) != 1 || r.Requests != 20 || r.Errors != 0 || r.Bytes != 20*g.Size || g.MBPerSec.Mean <= 0 {
			t.Fatalf("%s %d: %+v", g.Series, g.Size, r)
		}
	}
	// Client i is pinned to node i%2 and touches only its own set.
	if got := a.clientsSeen(); !slices.Equal(got, []string{"bench-c0"}) {
		t.Fatalf("node a saw %v", got)
	}
	if got := b.clientsSeen(); !slices.Equal(got, []string{"bench-c1"}) {
		t.Fatalf("node b saw %v", got)
	}
	for i, f := range []*fakeNode{a, b} {
		want := map[string]bool{}
		for j := range 3 {
			want[fmt.Sprintf("bench/c%d/f%d", i, j)] = true
		}
		if got := f.pathsOf(fmt.Sprintf("bench-c%d", i)); !maps.Equal(got, want) {
			t.Fatalf("client %d touched %v", i, slices.Sorted(maps.Keys(got)))
		}
	}
	// The last writes left files of the last size.
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.files["bench/c0/f1"]); n != 4<<10 {
		t.Fatalf("size %d", n)
	}
}

func TestReplicatedIOCommonSet(t *testing.T) {
	f := newFakeNode(t)
	p := tinyIO([]string{f.addr()}, []string{"read"}, []string{"common"})
	p.Sizes = []int64{1 << 10}
	rep, err := RunReplicatedIO(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) != 1 || rep.Groups[0].Series != "read common" || rep.Groups[0].MBPerSec.Mean <= 0 {
		t.Fatalf("%+v", rep.Groups)
	}
	want := map[string]bool{"bench/common/f0": true, "bench/common/f1": true, "bench/common/f2": true}
	for _, c := range []string{"bench-c0", "bench-c1"} {
		if got := f.pathsOf(c); !maps.Equal(got, want) {
			t.Fatalf("%s touched %v", c, got)
		}
	}
}

func TestReplicatedIOBadParams(t *testing.T) {
	f := newFakeNode(t)
	for name, mut := range map[string]func(*Params){
		"op":      func(p *Params) { p.Ops = []string{"scan"} },
		"sets":    func(p *Params) { p.Sets = []string{"own", "own"} },
		"nodes":   func(p *Params) { p.Nodes = nil },
		"unbound": func(p *Params) { p.Load = Load{} },
		"reps":    func(p *Params) { p.Reps = -1 },
		"files":   func(p *Params) { p.Files = -2 },
	} {
		p := tinyIO([]string{f.addr()}, nil, nil)
		mut(&p)
		if _, err := RunReplicatedIO(context.Background(), p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if f.puts.Load() != 0 {
		t.Fatal("wrote before validating")
	}
}

func TestReplicatedIOSetupFails(t *testing.T) {
	p := tinyIO([]string{deadAddr(t)}, nil, nil)
	_, err := RunReplicatedIO(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "setup: write bench/c") {
		t.Fatalf("err = %v", err)
	}
}

func TestSmallOps(t *testing.T) {
	f := newFakeNode(t)
	p := Params{Nodes: []string{f.addr()}, Clients: 4, Sizes: []int64{1 << 10}, Reps: 2, Load: Load{Count: 40}}
	rep, err := RunSmallOps(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) != 2 || rep.Metric != MetricOpsPerSec {
		t.Fatalf("%+v", rep.Groups)
	}
	for i, g := range rep.Groups {
		if g.Series != []string{"PUT", "GET"}[i] || len(g.Runs) != 2 || g.Requests != 80 || g.Errors != 0 || g.OpsPerSec.Mean <= 0 || g.Latency.Count != 80 {
			t.Fatalf("%+v", g)
		}
	}
	if f.puts.Load() != 80 || f.gets.Load() != 80 {
		t.Fatalf("puts %d gets %d", f.puts.Load(), f.gets.Load())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.files) != 80 {
		t.Fatalf("%d files: PUTs must create new files", len(f.files))
	}
}

func TestLookup(t *testing.T) {
	for _, s := range Scenarios() {
		if got, ok := Lookup(s.Name); !ok || got.Name != s.Name || s.Run == nil {
			t.Fatal(s.Name)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Fatal("found nope")
	}
}
