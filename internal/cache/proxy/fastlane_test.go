package proxy

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFastLane: the fast lane answers as the proxy's net/http listener
// does — plain hits by itself, everything else through the same handler
// (misses streamed and stored, conditions, Vary, uncacheable answers,
// unsafe methods).
func TestFastLane(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/private":
			w.Header().Set("Cache-Control", "private")
		case "/vary":
			w.Header().Set("Cache-Control", "max-age=600")
			w.Header().Set("Vary", "Accept-Language")
		default:
			w.Header().Set("Cache-Control", "max-age=600")
			w.Header().Set("ETag", `"v1"`)
		}
		if r.Method == http.MethodPost {
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "object "+r.URL.RequestURI()+" "+r.Header.Get("Accept-Language"))
	})
	p, h := proxyFor(t, o, t.TempDir(), Limits{})
	lane, fast := startFastLane(t, h)

	tests := []struct {
		name, method, path string
		hdr                []string
		fastPath           bool // answered by the fast path itself
	}{
		{"hit", "GET", "/a?x=1", nil, true},
		{"head hit", "HEAD", "/a?x=1", nil, true},
		{"conditional hit", "GET", "/a?x=1", []string{"If-None-Match", `"v1"`}, false},
		{"request directive", "GET", "/a?x=1", []string{"Cache-Control", "max-age=0"}, false},
		{"range", "GET", "/a?x=1", []string{"Range", "bytes=0-3"}, false},
		{"vary", "GET", "/vary", []string{"Accept-Language", "de"}, false},
		{"uncacheable", "GET", "/private", nil, false},
		{"refused host", "GET", "/a", []string{"Host", "elsewhere.example"}, false},
		{"unsafe method", "POST", "/a?x=1", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fetch(t, "GET", p.URL+tc.path, tc.hdr...) // stored, where it can be
			before := lane.hits.Load()
			want, wantBody := fetch(t, tc.method, p.URL+tc.path, tc.hdr...)
			got, gotBody := fetch(t, tc.method, fast+tc.path, tc.hdr...)
			if got.StatusCode != want.StatusCode || gotBody != wantBody {
				t.Errorf("fast lane %d %q, net/http %d %q", got.StatusCode, gotBody, want.StatusCode, wantBody)
			}
			for _, f := range []string{"Cache-Status", "Etag", "Content-Type", "Content-Length", "Content-Range", "Vary"} {
				g, w := got.Header.Get(f), want.Header.Get(f)
				if f == "Cache-Status" { // the TTL may have ticked
					g, w = ttlLess(g), ttlLess(w)
				}
				if g != w {
					t.Errorf("%s: fast lane %q, net/http %q", f, got.Header.Get(f), want.Header.Get(f))
				}
			}
			if fastPath := lane.hits.Load() > before; fastPath != tc.fastPath {
				t.Errorf("answered by the fast path: %v, want %v", fastPath, tc.fastPath)
			}
		})
	}
	t.Run("miss streamed and stored", func(t *testing.T) {
		resp, body := fetch(t, "GET", fast+"/new")
		if body != "object /new " || !strings.Contains(resp.Header.Get("Cache-Status"), "stored") {
			t.Errorf("%q %q", body, resp.Header.Get("Cache-Status"))
		}
		if resp, _ := fetch(t, "GET", p.URL+"/new"); !strings.HasPrefix(resp.Header.Get("Cache-Status"), "mure; hit") {
			t.Errorf("not stored: %q", resp.Header.Get("Cache-Status"))
		}
	})
}

// ttlLess drops the ttl parameter of a Cache-Status entry.
func ttlLess(cs string) string {
	var keep []string
	for _, p := range strings.Split(cs, ";") {
		if !strings.HasPrefix(strings.TrimSpace(p), "ttl=") {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, ";")
}

// TestFastLaneBusyDisk: a request on the fast lane for an object held
// only on a busy disk goes to the origin as on --proxy, and its refused
// disk read counts once, though both the fast path and the handler try it.
func TestFastLaneBusyDisk(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		io.WriteString(w, "origin "+r.URL.Path)
	})
	_, h, tiers, _, _ := busyDiskProxy(t, o, Config{}, 1, time.Hour, oneDiskOp)
	_, fast := startFastLane(t, h)

	resp, body := fetch(t, "GET", fast+"/d2")
	if cs := resp.Header.Get("Cache-Status"); body != "origin /d2" || !strings.Contains(cs, "detail=overload") {
		t.Errorf("an object on a busy disk: %q, Cache-Status %q; want the origin's answer, detail=overload", body, cs)
	}
	if n := tiers.Stats().DiskRefused; n != 1 {
		t.Errorf("disk refused %d for one request, want 1", n)
	}
}

// startFastLane serves h's fast lane on a loopback port until the test
// ends, and returns it and its base URL.
func startFastLane(t *testing.T, h *Handler) (*fastLane, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lane := newFastLane(h)
	lane.start(ln, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { lane.shutdown(context.Background()) })
	return lane, "http://" + ln.Addr().String()
}
