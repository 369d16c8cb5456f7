package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMissStreams: a miss's body reaches the client as the origin sends
// it, before the origin has finished; the whole body is then stored, and
// a collapsed miss waiting meanwhile is answered from the cache.
func TestMissStreams(t *testing.T) {
	release := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		w.Header().Set("Content-Length", "2000")
		io.WriteString(w, strings.Repeat("a", 1000))
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, strings.Repeat("b", 1000))
	})
	p, h := proxyFor(t, o, t.TempDir(), Limits{})
	resp, err := http.Get(p.URL + "/s")
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1000)
	_, err = io.ReadFull(resp.Body, first)
	waiter := make(chan string)
	go func() {
		r, body := fetch(t, "GET", p.URL+"/s")
		waiter <- r.Header.Get("Cache-Status") + " " + body[:1] + body[len(body)-1:]
	}()
	waitFor(t, "the second miss to wait", func() bool { return h.flights.waiting("/s") == 1 })
	close(release)
	if err != nil || strings.Trim(string(first), "a") != "" {
		t.Fatalf("first half before the origin finished: %v", err)
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil || len(rest) != 1000 || !strings.Contains(resp.Header.Get("Cache-Status"), "stored") {
		t.Errorf("rest: %d bytes, %v, %q", len(rest), err, resp.Header.Get("Cache-Status"))
	}
	if got := <-waiter; !strings.HasPrefix(got, "mure; hit; ttl=") || !strings.HasSuffix(got, "collapsed ab") {
		t.Errorf("collapsed miss: %q", got)
	}
	if r, body := fetch(t, "GET", p.URL+"/s"); len(body) != 2000 || !strings.HasPrefix(r.Header.Get("Cache-Status"), "mure; hit") {
		t.Errorf("after the fill: %d bytes, %q", len(body), r.Header.Get("Cache-Status"))
	}
	if n := o.hits.Load(); n != 1 {
		t.Errorf("%d origin fetches, want 1", n)
	}
}
