package proxy

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mure-dev/mure/internal/service"
)

func TestNewServiceChecksConfig(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no address", Config{Origins: []Origin{{URL: u}}}, "--proxy"},
		{"no origin", Config{Addr: "127.0.0.1:0"}, "no origin"},
		{"origin twice", Config{Addr: "127.0.0.1:0", Origins: []Origin{{URL: u}, {URL: u}}}, "twice"},
		{"probe of no origin", Config{Addr: "127.0.0.1:0", Origins: []Origin{{Host: "a.example", URL: u}}, Probe: Probe{URL: "/p"}}, "--proxy-probe"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewService(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one naming %q", err, tc.want)
			}
		})
	}
	for _, bad := range []string{"ftp://x", "a.example=", "=http://x", "http://x?q=1"} {
		if _, err := ParseOrigin(bad); err == nil {
			t.Errorf("ParseOrigin(%q) accepted", bad)
		}
	}
}

// TestServiceWithProbe starts the service as a node does and reads the
// probe's figures from /status and the metrics. The origin has a base
// path: the probe asks the proxy for /probe, which is /base/probe there.
func TestServiceWithProbe(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/base/probe" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, strings.Repeat("p", 10<<10))
	})
	u, _ := url.Parse(o.URL + "/base")
	s, err := NewService(Config{Addr: "127.0.0.1:0", Origins: []Origin{{URL: u}}, Dir: t.TempDir(), NoSync: true, Alone: true,
		Probe: Probe{URL: "/probe", Every: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := s.Start(context.Background(), service.Env{Logger: slog.New(slog.DiscardHandler), Metrics: reg}); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	var st Status
	for time.Now().Before(deadline) {
		st = s.Status().(Status)
		hits := testutil.ToFloat64(s.h.metrics.requests.WithLabelValues(resultHit))
		if st.Probe != nil && st.Probe.CacheSecs > 0 && st.Probe.OriginSecs > 0 && st.Tiers.Objects == 1 && hits >= 1 && st.Counts.Bytes["cache"] >= 10<<10 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	st = s.Status().(Status)
	if st.Probe == nil || st.Probe.CacheError != "" || st.Probe.OriginError != "" || st.Probe.CacheSecs <= 0 || st.Tiers.Objects != 1 {
		t.Fatalf("status %+v probe %+v", st, st.Probe)
	}
	if n := testutil.CollectAndCount(reg, "mure_cache_probe_seconds"); n != 2 {
		t.Errorf("%d probe series, want 2", n)
	}
	if v := testutil.ToFloat64(s.h.metrics.requests.WithLabelValues(resultHit)); v < 1 || st.Counts.Requests[resultHit] < 1 || st.Counts.Bytes["cache"] < 10<<10 {
		t.Errorf("hits %v, counts %+v: the probe's second fetch should be a hit", v, st.Counts)
	}
}

// TestBudgetsFollowMemoryTier: the fill budget follows --proxy-memory
// (half of it, room for one largest object, at most 256 MiB), as the disk
// tier's write queue does (a quarter, at most 32 MiB): both hold bodies in
// the heap besides the memory tier.
func TestBudgetsFollowMemoryTier(t *testing.T) {
	for _, tc := range []struct {
		memory, maxObject, fill int64
	}{
		{0, 0, 32 << 20},                 // the defaults: 64 MiB tier, 16 MiB objects
		{16 << 20, 0, 16 << 20},          // paper 003's node: one largest object
		{16 << 20, 1 << 20, 8 << 20},     // half the tier
		{4 << 30, 0, 256 << 20},          // at most 256 MiB
		{64 << 20, 100 << 20, 100 << 20}, // one object larger than the tier
	} {
		l := Limits{MaxObject: tc.maxObject}
		l.fill(tc.memory)
		if l.FillMemory != tc.fill {
			t.Errorf("memory %d, max object %d: fill budget %d, want %d", tc.memory, tc.maxObject, l.FillMemory, tc.fill)
		}
	}
}
