package proxy

import (
	"bufio"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// TestReusedConnectionRetried: an origin whose kept-alive connection
// answers the next request with garbage (what is left when a broken
// origin sends more than its Content-Length) costs the client nothing: the
// proxy sends the request again on a new connection. Without the second
// try the client gets a 502 (TestConformance saw it as a random test
// failing its setup).
func TestReusedConnectionRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var garbage atomic.Bool
	go func() {
		first := true
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveGarbageOrigin(c, first, &garbage)
			first = false
		}
	}()
	p, _ := proxyForURL(t, "http://"+ln.Addr().String(), t.TempDir(), Limits{})
	for i, want := range []string{"ok", "ok"} {
		resp, body := fetch(t, "GET", p.URL+"/x")
		if resp.StatusCode != http.StatusOK || body != want {
			t.Fatalf("request %d: %d %q, want 200 %q", i+1, resp.StatusCode, body, want)
		}
	}
	if !garbage.Load() {
		t.Fatal("the proxy did not reuse the origin's connection: the test did not exercise the second try")
	}
}

// serveGarbageOrigin answers every request on c with "ok", except the
// second one on the first connection, which gets bytes that are not HTTP.
func serveGarbageOrigin(c net.Conn, first bool, garbage *atomic.Bool) {
	defer c.Close()
	br := bufio.NewReader(c)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		req.Body.Close()
		if first && n == 2 {
			garbage.Store(true)
			c.Write([]byte("6f4-46a2-ad81-0fb25b3c5fea\r\n\r\n"))
			return
		}
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nCache-Control: no-store\r\n\r\nok"))
	}
}
