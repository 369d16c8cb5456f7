package proxy

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mure-dev/mure/internal/cache/tier"
	"github.com/mure-dev/mure/internal/service"
)

// stuckDisk is a disk seam that, once stuck, holds every disk read and
// write until released.
type stuckDisk struct {
	stuck   atomic.Bool
	release chan struct{}
	once    sync.Once
}

func (d *stuckDisk) unstick() {
	d.stuck.Store(false)
	d.once.Do(func() { close(d.release) })
}

func (d *stuckDisk) before() {
	if d.stuck.Load() {
		<-d.release
	}
}

// TestBypassUnderOverload: with the disk past its queue bound, or its
// oldest operation past the latency target, a request for an object held
// only on disk goes to the origin at once (result overload), a miss is
// stored in memory only, hits keep coming from memory, and /metrics
// answers; once the disk has caught up, the disk's objects are served
// again.
func TestBypassUnderOverload(t *testing.T) {
	for _, tc := range []struct {
		name    string
		queue   int
		latency time.Duration
		busy    func(tier.Stats) bool
	}{
		{"queue", 1, time.Hour, oneDiskOp},
		{"latency", 100, 20 * time.Millisecond, func(s tier.Stats) bool { return s.DiskOldest > 20*time.Millisecond }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "max-age=3600")
				io.WriteString(w, "origin "+r.URL.Path)
			})
			p, _, tiers, reg, unstick := busyDiskProxy(t, o, Config{}, tc.queue, tc.latency, tc.busy)

			fetches := o.hits.Load()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", p.URL+"/d2", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("an object on a busy disk: %v (queued behind the disk?)", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body := string(b)
			if cs := resp.Header.Get("Cache-Status"); body != "origin /d2" || !strings.Contains(cs, "detail=overload") {
				t.Errorf("an object on a busy disk: %q, Cache-Status %q; want the origin's answer, detail=overload", body, cs)
			}
			if n := o.hits.Load() - fetches; n != 1 {
				t.Errorf("the origin saw %d fetches for the bypassed object, want 1", n)
			}
			resp, body = fetch(t, "GET", p.URL+"/hot")
			if cs := resp.Header.Get("Cache-Status"); body != "origin /hot" || !strings.HasPrefix(cs, "mure; hit") {
				t.Errorf("a memory hit while the disk is busy: %q, Cache-Status %q", body, cs)
			}
			resp, _ = fetch(t, "GET", p.URL+"/new")
			if cs := resp.Header.Get("Cache-Status"); !strings.Contains(cs, "stored") {
				t.Errorf("a miss while the disk is busy: Cache-Status %q, want stored (in memory)", cs)
			}
			if resp, _ = fetch(t, "GET", p.URL+"/new"); !strings.HasPrefix(resp.Header.Get("Cache-Status"), "mure; hit") {
				t.Errorf("the miss stored in memory is not a hit: %q", resp.Header.Get("Cache-Status"))
			}
			// /metrics answers while the disk is stuck.
			if n := gathered(t, reg, "mure_cache_requests_total", "overload"); n != 1 {
				t.Errorf("mure_cache_requests_total{result=overload} = %v, want 1", n)
			}
			if st := tiers.Stats(); st.DiskRefused != 1 || st.DiskSkipped != 1 {
				t.Errorf("disk refused %d, skipped %d; want 1 and 1", st.DiskRefused, st.DiskSkipped)
			}

			unstick()
			if resp, body = fetch(t, "GET", p.URL+"/d2"); body != "origin /d2" || !strings.HasPrefix(resp.Header.Get("Cache-Status"), "mure; hit") {
				t.Errorf("after the disk caught up: %q, Cache-Status %q; want a hit from disk", body, resp.Header.Get("Cache-Status"))
			}
		})
	}
}

// oneDiskOp tells that the disk has an operation in flight.
func oneDiskOp(s tier.Stats) bool { return s.DiskInflight == 1 }

// busyDiskProxy stores /d1, /d2 and /d3, restarts the node so that they
// are on disk only, and stores /hot in memory (and on disk); then it
// holds a read of /d1 at the disk until busy tells the disk is busy
// (past queue operations in flight, or latency). unstick lets the disk
// go and waits for that read.
func busyDiskProxy(t *testing.T, o *origin, cfg Config, queue int, latency time.Duration, busy func(tier.Stats) bool) (
	p *httptest.Server, h *Handler, tiers *tier.Tiers, reg *prometheus.Registry, unstick func()) {
	t.Helper()
	dir := t.TempDir()
	p, h0 := proxyFor(t, o, dir, Limits{})
	for _, path := range []string{"/d1", "/d2", "/d3"} {
		fetch(t, "GET", p.URL+path)
	}
	h0.tiers.Flush()
	p.Close()

	disk := &stuckDisk{release: make(chan struct{})}
	tiers, err := tier.Open(tier.Config{Dir: dir, NoSync: true, DiskQueue: queue, DiskLatency: latency, BeforeDiskIO: disk.before})
	if err != nil {
		t.Fatal(err)
	}
	reg = prometheus.NewRegistry()
	u, _ := url.Parse(o.URL)
	cfg.Origins = []Origin{{URL: u}}
	h, err = NewHandler(cfg, tiers, service.Env{Logger: slog.New(slog.DiscardHandler), Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	p = httptest.NewServer(h)
	var wg sync.WaitGroup
	unstick = func() { disk.unstick(); wg.Wait() }
	t.Cleanup(func() { unstick(); p.Close(); h.Close(); tiers.Close() })
	fetch(t, "GET", p.URL+"/hot") // in memory (and on disk)
	tiers.Flush()                 // so that the one operation in flight is /d1's read
	disk.stuck.Store(true)
	wg.Add(1)
	go func() { defer wg.Done(); fetch(t, "GET", p.URL+"/d1") }() // held by the disk
	waitFor(t, "a disk read in flight", func() bool { return busy(tiers.Stats()) })
	return p, h, tiers, reg, unstick
}

// gathered reads one labelled series of a counter from the registry, as
// /metrics would show it.
func gathered(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if mf.GetName() == name && l.GetValue() == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("%s{%s} not in /metrics", name, label)
	return 0
}
