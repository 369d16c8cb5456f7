package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/testcluster"
)

// jsonWorker runs jobs in this process through the worker protocol (the job
// and the report cross as JSON, histograms included), as a client host's
// `mure bench-worker` would.
func jsonWorker(t *testing.T) Worker {
	return func(ctx context.Context, job Params) (*Report, error) {
		in, err := json.Marshal(job)
		if err != nil {
			return nil, err
		}
		var out bytes.Buffer
		if err := ServeJob(ctx, bytes.NewReader(in), &out); err != nil {
			return nil, err
		}
		var r Report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Errorf("worker report: %v", err)
			return nil, err
		}
		return &r, nil
	}
}

// TestRunDistributed splits 3 clients over 2 generators against a real
// node and checks the merged report: every configuration present, counts
// and latency histograms summed, the own sets named by global client index.
func TestRunDistributed(t *testing.T) {
	c := testcluster.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := Params{Nodes: []string{c.HTTPAddr(0)}, Token: c.Token(), Clients: 3, Files: 2, Sizes: []int64{1024},
		Ops: []string{"read", "write"}, Sets: []string{"own", "common"}, Reps: 2,
		Load: Load{Count: 15, Timeout: 10 * time.Second}}
	rep, err := RunDistributed(ctx, p, []Worker{jsonWorker(t), jsonWorker(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) != 4 {
		t.Fatalf("want 4 groups (read/write × own/common), got %d", len(rep.Groups))
	}
	for _, g := range rep.Groups {
		if len(g.Runs) != 2 {
			t.Fatalf("%s: want 2 runs, got %d", g.Series, len(g.Runs))
		}
		for _, r := range g.Runs {
			// each generator is bounded by the count: 2 × 15 requests
			if r.Clients != 3 || r.Requests != 30 || r.Errors != 0 || r.Latency.Count != r.OK || r.OK != 30 || r.MBPerSec <= 0 {
				t.Fatalf("%s: merged run %+v", g.Series, r)
			}
		}
	}
	cl := c.Client(0)
	for _, dir := range []string{"bench/c0/", "bench/c1/", "bench/c2/", "bench/common/"} {
		page, err := cl.List(ctx, client.ListOptions{Prefix: dir, Consistent: true})
		if err != nil || len(page.Files) != 2 {
			t.Fatalf("list %s: %v, %d files (want 2)", dir, err, len(page.Files))
		}
	}
	if page, _ := cl.List(ctx, client.ListOptions{Prefix: "bench/c3/"}); page != nil && len(page.Files) != 0 {
		t.Fatalf("a fourth client's set exists: %d files", len(page.Files))
	}
}

func TestCombine(t *testing.T) {
	a := &Report{Scenario: "replicated-io", Metric: MetricMBPerSec, Label: "1 srv", Groups: []*Group{{Series: "read own", Size: 4096}}}
	b := &Report{Scenario: "replicated-io", Metric: MetricMBPerSec, Label: "2 srv", Groups: []*Group{{Series: "read own", Size: 4096}}}
	c, err := Combine([]*Report{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Groups) != 2 || c.Groups[0].Series != "1 srv read own" || c.Groups[1].Series != "2 srv read own" || a.Groups[0].Series != "read own" {
		t.Fatalf("combined series %q %q (original now %q)", c.Groups[0].Series, c.Groups[1].Series, a.Groups[0].Series)
	}
	if _, err := Combine([]*Report{a, {Scenario: "small-ops", Metric: MetricOpsPerSec}}); err == nil {
		t.Fatal("combined two different scenarios")
	}
}
