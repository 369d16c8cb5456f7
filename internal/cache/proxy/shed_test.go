package proxy

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBypassBound: with the disk busy, requests for objects held only on
// disk, and misses, go to the origin up to --proxy-bypass-max at once;
// beyond, they are shed at once (503 with Retry-After, or a 307 to the origin), without the
// origin, while hits from memory keep being served; the bound halves to
// nothing while the host's CPU runs short and comes back when it does not.
func TestBypassBound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		redirect bool
		cpu      bool // the bound is taken by the CPU signal, not by a relay in flight
	}{
		{"relays in flight", false, false},
		{"redirect to the origin", true, false},
		{"cpu short", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hold := make(chan struct{})
			var holdOnce sync.Once
			release := func() { holdOnce.Do(func() { close(hold) }) }
			o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "max-age=3600")
				if r.URL.Path == "/d2" && r.Header.Get("X-Hold") != "" {
					<-hold // a relay in flight
				}
				io.WriteString(w, "origin "+r.URL.Path)
			})
			var short atomic.Bool
			p, h, tiers, reg, _ := busyDiskProxy(t, o, Config{BypassMax: 1, BypassRedirect: tc.redirect,
				CPUShort: short.Load, BypassTick: 5 * time.Millisecond}, 1, time.Hour, oneDiskOp)
			t.Cleanup(release)

			if tc.cpu {
				short.Store(true)
				waitFor(t, "the bound to fall to nothing", func() bool { return h.relays.limit.Load() == 0 })
			} else {
				var wg sync.WaitGroup
				wg.Add(1)
				go func() { defer wg.Done(); fetch(t, "GET", p.URL+"/d2", "X-Hold", "1") }()
				t.Cleanup(wg.Wait)
				waitFor(t, "a relay in flight", func() bool { return h.relays.inflight.Load() == 1 })
			}

			fetches := o.hits.Load()
			resp, _ := fetchNoRedirect(t, p.URL+"/d3")
			cs := resp.Header.Get("Cache-Status")
			switch {
			case tc.redirect:
				if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != o.URL+"/d3" {
					t.Errorf("beyond the bound: %d, Location %q; want 307 to %s/d3", resp.StatusCode, resp.Header.Get("Location"), o.URL)
				}
			case resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "":
				t.Errorf("beyond the bound: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			if !strings.Contains(cs, "detail=shed") {
				t.Errorf("a shed request's Cache-Status %q, want detail=shed", cs)
			}
			if n := o.hits.Load() - fetches; n != 0 {
				t.Errorf("the origin saw %d fetches for a shed request, want none", n)
			}
			// A miss is kept in memory only while the disk is busy: a relay
			// too, shed beyond the bound.
			if resp, _ := fetchNoRedirect(t, p.URL+"/new"); !strings.Contains(resp.Header.Get("Cache-Status"), "detail=shed") {
				t.Errorf("a miss beyond the bound: %d, Cache-Status %q; want it shed", resp.StatusCode, resp.Header.Get("Cache-Status"))
			}
			if n := o.hits.Load() - fetches; n != 0 {
				t.Errorf("the origin saw %d fetches for shed requests, want none", n)
			}
			for range 5 {
				resp, body := fetch(t, "GET", p.URL+"/hot")
				if !strings.HasPrefix(resp.Header.Get("Cache-Status"), "mure; hit") || body != "origin /hot" {
					t.Fatalf("a memory hit while relays are at their bound: %q, Cache-Status %q", body, resp.Header.Get("Cache-Status"))
				}
			}
			if n := gathered(t, reg, "mure_cache_requests_total", "shed"); n != 2 {
				t.Errorf("mure_cache_requests_total{result=shed} = %v, want 2", n)
			}

			// The bound frees: the relay ends, or the CPU is no longer short.
			release()
			short.Store(false)
			waitFor(t, "the bound to free", func() bool {
				return h.relays.inflight.Load() == 0 && h.relays.limit.Load() == 1
			})
			resp, body := fetch(t, "GET", p.URL+"/d3")
			if cs := resp.Header.Get("Cache-Status"); body != "origin /d3" || !strings.Contains(cs, "detail=overload") {
				t.Errorf("with the bound free: %q, Cache-Status %q; want a relay to the origin (detail=overload)", body, cs)
			}
			if !tiers.Busy() {
				t.Error("the disk is no longer busy: the test proved nothing about bypass")
			}
		})
	}
}

// fetchNoRedirect GETs url without following a redirect.
func fetchNoRedirect(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v (queued behind the disk or the origin?)", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestSchedShort: the scheduler's latencies since the previous reading
// are what the signal judges: none beyond an hour, some beyond nothing.
func TestSchedShort(t *testing.T) {
	never, always := schedShort(time.Hour), schedShort(0)
	never()
	always()
	var wg sync.WaitGroup
	for range 1000 { // goroutines made runnable: the scheduler records their waits
		wg.Add(1)
		go func() { defer wg.Done(); time.Sleep(time.Microsecond) }()
	}
	wg.Wait()
	if never() {
		t.Error("short with no wait beyond an hour")
	}
	if !always() {
		t.Error("not short though every wait is beyond 0")
	}
}

// TestBypassNoRelays: a bound of NoRelays (--proxy-bypass-max 0) relays
// nothing while the disk is busy: a disk-only object and a miss are shed
// without asking the origin, and hits from memory are served; 0 in a
// Config is the default bound.
func TestBypassNoRelays(t *testing.T) {
	if g := newRelays(0, nil); g.limit.Load() != DefaultBypassMax {
		t.Errorf("a Config's 0: bound %d, want the default %d", g.limit.Load(), DefaultBypassMax)
	}
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		io.WriteString(w, "origin "+r.URL.Path)
	})
	p, h, tiers, _, _ := busyDiskProxy(t, o, Config{BypassMax: NoRelays}, 1, time.Hour, oneDiskOp)
	if l := h.relays.limit.Load(); l != 0 {
		t.Fatalf("bound %d, want 0", l)
	}
	fetches := o.hits.Load()
	for _, path := range []string{"/d3", "/new"} {
		resp, _ := fetchNoRedirect(t, p.URL+path)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(resp.Header.Get("Cache-Status"), "detail=shed") {
			t.Errorf("%s with no relays: %d, Cache-Status %q; want 503 shed", path, resp.StatusCode, resp.Header.Get("Cache-Status"))
		}
	}
	if n := o.hits.Load() - fetches; n != 0 {
		t.Errorf("the origin saw %d fetches, want none", n)
	}
	if resp, body := fetch(t, "GET", p.URL+"/hot"); !strings.HasPrefix(resp.Header.Get("Cache-Status"), "mure; hit") || body != "origin /hot" {
		t.Errorf("a memory hit with no relays: %q, Cache-Status %q", body, resp.Header.Get("Cache-Status"))
	}
	if !tiers.Busy() {
		t.Error("the disk is no longer busy: the test proved nothing about bypass")
	}
}
