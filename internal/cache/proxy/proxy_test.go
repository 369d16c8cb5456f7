package proxy

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/cache/tier"
	"github.com/mure-dev/mure/internal/service"
)

// origin is a test origin that counts its requests.
type origin struct {
	*httptest.Server
	hits atomic.Int64
}

func newOrigin(t testing.TB, h http.HandlerFunc) *origin {
	o := &origin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(o.Close)
	return o
}

// proxyFor starts a proxy in front of the origin with its disk tier in dir.
func proxyFor(t testing.TB, o *origin, dir string, lim Limits) (*httptest.Server, *Handler) {
	t.Helper()
	return proxyForURL(t, o.URL, dir, lim)
}

func proxyForURL(t testing.TB, originURL, dir string, lim Limits) (*httptest.Server, *Handler) {
	t.Helper()
	u, _ := url.Parse(originURL)
	tiers, err := tier.Open(tier.Config{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(Config{Origins: []Origin{{URL: u}}, Limits: lim}, tiers, service.Env{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close(); tiers.Close() })
	return srv, h
}

func fetch(t *testing.T, method, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for i := 0; i < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, "ERR:" + err.Error()
	}
	return resp, string(b)
}

func TestHitMissAndRefusal(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		fmt.Fprintf(w, "body of %s", r.URL.Path)
	})
	p, _ := proxyFor(t, o, t.TempDir(), Limits{})
	for i, want := range []string{"fwd=uri-miss", "hit"} {
		resp, body := fetch(t, "GET", p.URL+"/a")
		if body != "body of /a" || !strings.Contains(resp.Header.Get("Cache-Status"), want) {
			t.Fatalf("request %d: %q, Cache-Status %q", i, body, resp.Header.Get("Cache-Status"))
		}
	}
	resp, _ := fetch(t, "HEAD", p.URL+"/a")
	if !strings.Contains(resp.Header.Get("Cache-Status"), "hit") || resp.Header.Get("Content-Length") != "10" {
		t.Errorf("HEAD not answered from the stored GET: %v", resp.Header)
	}
	resp, _ = fetch(t, "GET", p.URL+"/a", "Host", "evil.example")
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("unknown Host answered %d", resp.StatusCode)
	}
	if n := o.hits.Load(); n != 1 {
		t.Errorf("origin saw %d requests, want 1", n)
	}
}

func TestConcurrentMissesCollapse(t *testing.T) {
	release := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, "shared")
	})
	p, h := proxyFor(t, o, t.TempDir(), Limits{})
	const n = 20
	var wg sync.WaitGroup
	bodies := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, bodies[i] = fetch(t, "GET", p.URL+"/obj")
		}()
	}
	waitFor(t, "the other misses to wait for the first", func() bool { return h.flights.waiting("/obj") >= n-1 })
	close(release)
	wg.Wait()
	for i, b := range bodies {
		if b != "shared" {
			t.Fatalf("client %d got %q", i, b)
		}
	}
	if got := o.hits.Load(); got != 1 {
		t.Errorf("%d concurrent misses made %d origin fetches, want 1", n, got)
	}
}

func TestUncacheableReleasesWaiters(t *testing.T) {
	release := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Cache-Control", "private")
		io.WriteString(w, "mine")
	})
	p, h := proxyFor(t, o, t.TempDir(), Limits{})
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() { defer wg.Done(); fetch(t, "GET", p.URL+"/p") }()
	}
	waitFor(t, "4 misses to wait for the first", func() bool { return h.flights.waiting("/p") >= 4 })
	close(release)
	wg.Wait()
	if got := o.hits.Load(); got != 5 {
		t.Errorf("private response: %d origin fetches, want 5 (each waiter goes to the origin)", got)
	}
}

func TestValidationAndStale(t *testing.T) {
	var fail atomic.Bool
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Cache-Control", "max-age=1, stale-if-error=600")
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		io.WriteString(w, "version 1")
	})
	p, h := proxyFor(t, o, t.TempDir(), Limits{})
	clock := time.Now()
	var mu sync.Mutex
	h.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	fetch(t, "GET", p.URL+"/v")
	advance(5 * time.Second)
	resp, body := fetch(t, "GET", p.URL+"/v")
	if body != "version 1" || !strings.Contains(resp.Header.Get("Cache-Status"), "fwd-status=304") {
		t.Fatalf("revalidation: %q %q", body, resp.Header.Get("Cache-Status"))
	}
	resp, _ = fetch(t, "GET", p.URL+"/v", "If-None-Match", `"v1"`)
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("client's conditional request answered %d", resp.StatusCode)
	}
	advance(5 * time.Second)
	fail.Store(true)
	resp, body = fetch(t, "GET", p.URL+"/v")
	if body != "version 1" || !strings.Contains(resp.Header.Get("Cache-Status"), "stale-if-error") {
		t.Errorf("origin down: %d %q %q", resp.StatusCode, body, resp.Header.Get("Cache-Status"))
	}
}

func TestInvalidationByUnsafeMethod(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, r.Method)
	})
	p, _ := proxyFor(t, o, t.TempDir(), Limits{})
	fetch(t, "GET", p.URL+"/x")
	fetch(t, "POST", p.URL+"/x")
	resp, body := fetch(t, "GET", p.URL+"/x")
	if body != "GET" || !strings.Contains(resp.Header.Get("Cache-Status"), "uri-miss") {
		t.Errorf("after POST: %q %q", body, resp.Header.Get("Cache-Status"))
	}
	if got := o.hits.Load(); got != 3 {
		t.Errorf("%d origin fetches, want 3", got)
	}
}

func TestRestartKeepsDiskTier(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "kept")
	})
	dir := t.TempDir()
	p1, h1 := proxyFor(t, o, dir, Limits{})
	fetch(t, "GET", p1.URL+"/k")
	h1.tiers.Flush() // a stopping node writes its queue out (Close); this one keeps running
	p2, _ := proxyFor(t, o, dir, Limits{})
	resp, body := fetch(t, "GET", p2.URL+"/k")
	if body != "kept" || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
		t.Errorf("after restart: %q %q", body, resp.Header.Get("Cache-Status"))
	}
	if got := o.hits.Load(); got != 1 {
		t.Errorf("%d origin fetches, want 1", got)
	}
}

// hostile serves raw bytes on a TCP listener: an origin that breaks HTTP.
func hostile(t *testing.T, reply func(c net.Conn)) *origin {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	o := &origin{Server: &httptest.Server{URL: "http://" + ln.Addr().String()}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.hits.Add(1)
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				c.Read(buf)
				reply(c)
				select {
				case <-done:
				case <-time.After(2 * time.Second):
				}
			}()
		}
	}()
	return o
}

func TestHostileOrigins(t *testing.T) {
	head := "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\n"
	tests := []struct {
		name  string
		reply func(c net.Conn)
		lim   Limits
	}{
		{"dies mid-body", func(c net.Conn) { io.WriteString(c, head+"Content-Length: 100\r\n\r\nonly part") }, Limits{}},
		{"stalls mid-body", func(c net.Conn) {
			io.WriteString(c, head+"Content-Length: 100\r\n\r\nonly part")
			time.Sleep(time.Second)
		}, Limits{BodyTimeout: 200 * time.Millisecond}},
		{"huge header", func(c net.Conn) {
			io.WriteString(c, head+"X-Big: "+strings.Repeat("a", 100<<10)+"\r\nContent-Length: 2\r\n\r\nhi")
		}, Limits{MaxHeaderBytes: 16 << 10}},
		{"endless body over the object limit", func(c net.Conn) {
			io.WriteString(c, head+"Transfer-Encoding: chunked\r\n\r\n")
			chunk := fmt.Sprintf("%x\r\n%s\r\n", 1024, strings.Repeat("z", 1024))
			for range 64 {
				io.WriteString(c, chunk)
			}
			io.WriteString(c, "0\r\n\r\n")
		}, Limits{MaxObject: 8 << 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := hostile(t, tc.reply)
			p, h := proxyFor(t, o, t.TempDir(), tc.lim)
			// A body that breaks after the header was sent aborts the
			// client's response: an error, or a 5xx before the header.
			resp, err := http.Get(p.URL + "/h")
			if err == nil {
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK && err == nil && len(b) < 64<<10 {
					t.Errorf("a broken response was presented as whole: %d %q", resp.StatusCode, b)
				}
			}
			h.tiers.Flush()
			if st := h.tiers.Stats(); st.Objects != 0 {
				t.Errorf("something was cached: %+v", st)
			}
		})
	}
}

// TestRequestSmuggling: requests whose framing is ambiguous are refused,
// or passed with one framing (Transfer-Encoding wins and Content-Length is
// dropped, RFC 9112 §6.3): the origin never sees both.
func TestRequestSmuggling(t *testing.T) {
	var seen atomic.Value
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen.Store(fmt.Sprintf("cl=%v te=%v body=%q", r.Header["Content-Length"], r.TransferEncoding, b))
		io.WriteString(w, "ok")
	})
	p, _ := proxyFor(t, o, t.TempDir(), Limits{})
	tests := []struct {
		name, req string
		passed    string // "": refused
	}{
		{"two Content-Lengths", "POST /s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nabcd", ""},
		{"Content-Length and chunked", "POST /s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 40\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
			`cl=[] te=[chunked] body="abcd"`},
		{"unknown transfer coding", "POST /s HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n", ""},
		{"space before colon", "GET /s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length : 4\r\n\r\nabcd", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen.Store("")
			c, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, tc.req)
			b, _ := io.ReadAll(c)
			status := strings.SplitN(string(b), "\r\n", 2)[0]
			if tc.passed == "" {
				if !strings.HasPrefix(status, "HTTP/1.1 400") && !strings.HasPrefix(status, "HTTP/1.1 501") {
					t.Errorf("answered %q", status)
				}
				if got := seen.Load().(string); got != "" {
					t.Errorf("reached the origin: %s", got)
				}
				return
			}
			if got := seen.Load().(string); !strings.HasPrefix(status, "HTTP/1.1 200") || got != tc.passed {
				t.Errorf("answered %q; the origin saw %s, want %s", status, got, tc.passed)
			}
		})
	}
}

func TestStaleWhenOriginUnreachable(t *testing.T) {
	tests := []struct {
		cc        string
		wantStale bool
	}{
		{"max-age=1", true},
		{"max-age=1, must-revalidate", false},
		{"s-maxage=1", false},
	}
	for _, tc := range tests {
		t.Run(tc.cc, func(t *testing.T) {
			o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", tc.cc)
				io.WriteString(w, "old")
			})
			p, h := proxyFor(t, o, t.TempDir(), Limits{})
			fetch(t, "GET", p.URL+"/s")
			later := time.Now().Add(time.Minute)
			h.now = func() time.Time { return later }
			o.Close()
			resp, body := fetch(t, "GET", p.URL+"/s")
			if gotStale := resp.StatusCode == 200 && body == "old"; gotStale != tc.wantStale {
				t.Errorf("origin down: %d %q (stale wanted: %v)", resp.StatusCode, body, tc.wantStale)
			}
		})
	}
}

func TestRangeFromStoredObject(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("ETag", `"r"`)
		io.WriteString(w, "0123456789")
	})
	p, _ := proxyFor(t, o, t.TempDir(), Limits{})
	resp, body := fetch(t, "GET", p.URL+"/r", "Range", "bytes=2-4")
	// This origin ignores ranges: the proxy passes its answer through.
	if resp.StatusCode != http.StatusOK || body != "0123456789" || !strings.Contains(resp.Header.Get("Cache-Status"), "bypass") {
		t.Fatalf("range on a miss: %d %q %q", resp.StatusCode, body, resp.Header.Get("Cache-Status"))
	}
	fetch(t, "GET", p.URL+"/r")
	tests := []struct{ rng, want string }{{"bytes=2-4", "234"}, {"bytes=7-", "789"}, {"bytes=-2", "89"}}
	for _, tc := range tests {
		resp, body := fetch(t, "GET", p.URL+"/r", "Range", tc.rng)
		if resp.StatusCode != http.StatusPartialContent || body != tc.want || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
			t.Errorf("%s: %d %q %q", tc.rng, resp.StatusCode, body, resp.Header.Get("Cache-Status"))
		}
	}
	if got := o.hits.Load(); got != 2 {
		t.Errorf("%d origin fetches, want 2", got)
	}
}

// TestCollapseWaitIsBounded: a waiter whose leader's fetch outlasts
// CollapseWait goes to the origin itself rather than wait on.
func TestCollapseWaitIsBounded(t *testing.T) {
	release := make(chan struct{})
	var first atomic.Bool
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		if first.CompareAndSwap(false, true) {
			<-release // the leader's fetch hangs
		}
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, "x")
	})
	defer close(release)
	p, h := proxyFor(t, o, t.TempDir(), Limits{CollapseWait: 100 * time.Millisecond})
	go http.Get(p.URL + "/slow")
	waitFor(t, "the leader's fetch", func() bool { return h.flights.busy("_ /slow") })
	start := time.Now()
	resp, body := fetch(t, "GET", p.URL+"/slow")
	if body != "x" || resp.StatusCode != 200 {
		t.Fatalf("waiter: %d %q", resp.StatusCode, body)
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Errorf("the waiter waited %v for a hung leader", waited)
	}
	if n := o.hits.Load(); n != 2 {
		t.Errorf("%d origin fetches, want 2 (the hung leader's and the waiter's own)", n)
	}
}

func TestAbsoluteFormForAnotherSiteRefused(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "origin") })
	p, _ := proxyFor(t, o, t.TempDir(), Limits{})
	c, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET http://evil.example/x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(b), "HTTP/1.1 421") || o.hits.Load() != 0 {
		t.Errorf("absolute-form request for another site: %q (origin saw %d)", strings.SplitN(string(b), "\r\n", 2)[0], o.hits.Load())
	}
}

// TestDiskFailureLosesNothing: a disk tier that cannot be written (its
// temporary directory replaced by a file) still answers the client whole;
// the object is kept in memory only and the failed write counted.
func TestDiskFailureLosesNothing(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "body")
	})
	dir := t.TempDir()
	p, h := proxyFor(t, o, dir, Limits{})
	if err := os.Remove(filepath.Join(dir, "tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tmp"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, body := fetch(t, "GET", p.URL+"/d"); body != "body" {
		t.Errorf("%q", body)
	}
	h.tiers.Flush()
	if st := h.tiers.Stats(); st.WriteErrors != 1 || st.DiskObjects != 0 {
		t.Errorf("a failed disk write: %+v", st)
	}
	// Kept in memory only.
	if resp, body := fetch(t, "GET", p.URL+"/d"); body != "body" || !strings.HasPrefix(resp.Header.Get("Cache-Status"), "mure; hit") {
		t.Errorf("after the failed write: %q %q", body, resp.Header.Get("Cache-Status"))
	}
}

// TestCollapseCap: beyond CollapseMax waiters, a miss fetches on its own.
func TestCollapseCap(t *testing.T) {
	release := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, "c")
	})
	p, h := proxyFor(t, o, t.TempDir(), Limits{CollapseMax: 2})
	var wg sync.WaitGroup
	get := func() { defer wg.Done(); fetch(t, "GET", p.URL+"/cap") }
	wg.Add(3) // a leader and two waiters: the list is full
	for range 3 {
		go get()
	}
	waitFor(t, "2 waiters", func() bool { return h.flights.waiting("/cap") >= 2 })
	wg.Add(2) // these two cannot wait: they fetch on their own
	go get()
	go get()
	waitFor(t, "the 2 beyond the cap to reach the origin", func() bool { return o.hits.Load() >= 3 })
	close(release)
	wg.Wait()
	if got := o.hits.Load(); got != 3 {
		t.Errorf("%d origin fetches, want 3 (one for the leader and its 2 waiters, one each beyond the cap)", got)
	}
}

// TestFillMemoryBound: while fills hold the memory budget, another miss is
// passed through uncached rather than buffered.
func TestFillMemoryBound(t *testing.T) {
	release := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Length", "1000")
		if r.URL.Path == "/big" {
			w.Write(make([]byte, 500))
			w.(http.Flusher).Flush()
			<-release
			w.Write(make([]byte, 500))
			return
		}
		w.Write(make([]byte, 1000))
	})
	p, h := proxyFor(t, o, t.TempDir(), Limits{FillMemory: 1500})
	done := make(chan struct{})
	go func() { defer close(done); fetch(t, "GET", p.URL+"/big") }()
	reserved := func() int64 { h.fills.mu.Lock(); defer h.fills.mu.Unlock(); return h.fills.used }
	waitFor(t, "the fill of /big to hold the budget", func() bool { return reserved() >= 1000 })
	resp, body := fetch(t, "GET", p.URL+"/other")
	if len(body) != 1000 || !strings.Contains(resp.Header.Get("Cache-Status"), "fill-budget") {
		t.Errorf("%d bytes, %q", len(body), resp.Header.Get("Cache-Status"))
	}
	close(release)
	<-done
	// The client has the whole body a moment before the fill is stored.
	waitFor(t, "the fill within the budget to be stored", func() bool { _, ok := h.lookup("_ /big", http.Header{}); return ok })
	resp, _ = fetch(t, "GET", p.URL+"/other")
	if !strings.Contains(resp.Header.Get("Cache-Status"), "stored") {
		t.Errorf("with the budget free again: %q", resp.Header.Get("Cache-Status"))
	}
}

// TestRevalidationKeepsFillBudget: a background revalidation
// (stale-while-revalidate) reads its body within the fill budget like a
// miss: with the budget spent, the new response is not buffered and the
// stale object stays as it was.
func TestRevalidationKeepsFillBudget(t *testing.T) {
	release := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=1, stale-while-revalidate=600")
		w.Header().Set("Content-Length", "1000")
		if r.URL.Path == "/big" {
			w.Write(make([]byte, 500))
			w.(http.Flusher).Flush()
			<-release
			w.Write(make([]byte, 500))
			return
		}
		w.Write(make([]byte, 1000))
	})
	p, h := proxyFor(t, o, t.TempDir(), Limits{FillMemory: 1500})
	clock := time.Now()
	var mu sync.Mutex
	h.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	fetch(t, "GET", p.URL+"/swr")
	stored, _ := h.lookup("_ /swr", http.Header{})
	done := make(chan struct{})
	go func() { defer close(done); fetch(t, "GET", p.URL+"/big") }()
	defer func() { close(release); <-done }()
	reserved := func() int64 { h.fills.mu.Lock(); defer h.fills.mu.Unlock(); return h.fills.used }
	waitFor(t, "the fill of /big to hold the budget", func() bool { return reserved() >= 1000 })
	mu.Lock()
	clock = clock.Add(5 * time.Second)
	mu.Unlock()
	resp, _ := fetch(t, "GET", p.URL+"/swr")
	if !strings.Contains(resp.Header.Get("Cache-Status"), "stale-while-revalidate") {
		t.Fatalf("stale object: %q", resp.Header.Get("Cache-Status"))
	}
	waitFor(t, "the revalidation to end", func() bool { return !h.flights.busy("_ /swr") })
	if n := o.hits.Load(); n != 3 {
		t.Errorf("%d origin fetches, want 3 (/swr, /big, the revalidation)", n)
	}
	if m, _ := h.lookup("_ /swr", http.Header{}); m == nil || !m.ResponseTime.Equal(stored.ResponseTime) {
		t.Error("the revalidation stored a body beyond the fill budget")
	}
	if n := reserved(); n != 1000 {
		t.Errorf("%d bytes reserved after the revalidation, want 1000 (/big's)", n)
	}
}

// TestDeclaredTooLargeStreams: a body whose Content-Length is over the
// object limit reaches the client as it arrives, uncached, without being
// buffered or holding the fill budget meanwhile.
func TestDeclaredTooLargeStreams(t *testing.T) {
	release := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Header().Set("Content-Length", "5000")
		w.Write(make([]byte, 2500))
		w.(http.Flusher).Flush()
		<-release
		w.Write(make([]byte, 2500))
	})
	p, h := proxyFor(t, o, t.TempDir(), Limits{MaxObject: 1000, FillMemory: 1500})
	resp, err := http.Get(p.URL + "/huge")
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 2500)
	_, err = io.ReadFull(resp.Body, first)
	h.fills.mu.Lock()
	used := h.fills.used
	h.fills.mu.Unlock()
	close(release)
	if err != nil || used != 0 {
		t.Errorf("first half: %v; %d bytes of the fill budget held, want 0", err, used)
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil || len(rest) != 2500 || !strings.Contains(resp.Header.Get("Cache-Status"), "too-large") {
		t.Errorf("%d more bytes, %v, %q", len(rest), err, resp.Header.Get("Cache-Status"))
	}
}

// waitFor polls cond until it holds, failing the test after 10 s; the
// test goes on (Errorf, not Fatalf) so that it still releases the origin
// handlers it holds, whose server's Close would otherwise wait for ever.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("timed out waiting for %s", what)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
