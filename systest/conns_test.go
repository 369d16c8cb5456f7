package systest

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/cache/proxy"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestMaxConns: a node holding --max-conns connections on a client port
// (net/http, the fast read lane), or on the caching proxy's ports (net/http
// and the fast lane; the fasthttp lanes are served the TCP connections bare
// and give their slots back by fasthttp's report of their end), answers the next one at once with a 503
// in JSON that says why, counts it, and serves new connections again once
// one has closed. Idle connections cannot take a node's memory and
// descriptors without bound.
func TestMaxConns(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "object")
	}))
	defer origin.Close()
	u, _ := url.Parse(origin.URL)
	var proxyAddr, fastAddr, readAddr string
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.MaxConns = 3
		readAddr = testcluster.FreeAddr(t)
		cfg.FastHTTPAddr = readAddr
		proxyAddr, fastAddr = testcluster.FreeAddr(t), testcluster.FreeAddr(t)
		cfg.Proxy = &proxy.Config{Addr: proxyAddr, FastAddr: fastAddr, Origins: []proxy.Origin{{URL: u}}}
	}})
	c.WaitReady(0)
	for _, port := range []struct{ name, addr, path string }{
		{"client port", c.HTTPAddr(0), "/healthz"},
		{"fast read lane", readAddr, "/healthz"}, // redirected to the client port once admitted
		{"proxy port", proxyAddr, "/object"},
		{"proxy fast lane", fastAddr, "/object"},
	} {
		t.Run(port.name, func(t *testing.T) {
			before := refusals(t, c.HTTPAddr(0))
			if before < 0 {
				t.Fatal("no mure_client_connections_refused_total in /metrics before the test")
			}
			var idle []net.Conn
			for range 3 {
				conn, err := net.Dial("tcp", port.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				idle = append(idle, conn)
			}
			// The listener counts a connection once it has accepted it: poll.
			var body string
			testcluster.WaitFor(t, 10*time.Second, "a connection over the limit to be refused", func() bool {
				conn, err := net.Dial("tcp", port.addr)
				if err != nil {
					return false
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(2 * time.Second))
				io.WriteString(conn, "GET "+port.path+" HTTP/1.1\r\nHost: "+port.addr+"\r\n\r\n")
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					return false
				}
				b, _ := io.ReadAll(resp.Body)
				body = string(b)
				return resp.StatusCode == http.StatusServiceUnavailable
			})
			var e struct{ Error, Code string }
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code != "overloaded" || !strings.Contains(e.Error, "3 connections open") {
				t.Fatalf("refusal %q: want JSON with code overloaded naming the limit", body)
			}
			idle[0].Close()
			testcluster.WaitFor(t, 10*time.Second, "a new connection to be served after one closed", func() bool {
				resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get("http://" + port.addr + port.path)
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK
			})
			for _, conn := range idle[1:] {
				conn.Close()
			}
			testcluster.WaitFor(t, 10*time.Second, "the refusal counted in the metrics", func() bool {
				return refusals(t, c.HTTPAddr(0)) > before
			})
		})
	}
}

// refusals reads mure_client_connections_refused_total from a node's
// /metrics (-1 when it cannot), on a connection of its own that it closes.
func refusals(t *testing.T, addr string) int {
	t.Helper()
	resp, err := (&http.Client{Transport: testcluster.Authorize(&http.Transport{DisableKeepAlives: true})}).Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "mure_client_connections_refused_total "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// TestStatusCountsPorts: /status's api.connections counts the connections
// open on --s3's and --proxy's ports as well as the client ports', and
// api.ports gives each listener's count, with no --max-conns bound too
// (the listener then only counts).
func TestStatusCountsPorts(t *testing.T) {
	var s3Addr, proxyAddr string
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.MaxConns = 0
		s3Addr, proxyAddr = testcluster.FreeAddr(t), testcluster.FreeAddr(t)
		cfg.S3Addr = s3Addr
		cfg.Proxy = &proxy.Config{Addr: proxyAddr, Origins: []proxy.Origin{{URL: &url.URL{Scheme: "http", Host: "127.0.0.1:9"}}}}
	}})
	c.WaitReady(0)
	type status struct {
		Services struct {
			API node.APIStatus `json:"api"`
		} `json:"services"`
	}
	read := func() (st status) {
		a := call(t, c.HTTPAddr(0), "GET", "/status", bearer(c.Token()), "")
		b, _ := json.Marshal(a.body)
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	base := read().Services.API.Connections
	var conns []net.Conn
	for _, addr := range []string{s3Addr, s3Addr, proxyAddr} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns = append(conns, conn)
	}
	byPort := func(api node.APIStatus) map[string]int {
		m := map[string]int{}
		for _, p := range api.Ports {
			m[p.Port] += p.Connections
		}
		return m
	}
	var api node.APIStatus
	testcluster.WaitFor(t, 10*time.Second, "/status to count the --s3 and --proxy connections", func() bool {
		api = read().Services.API
		p := byPort(api)
		return p["s3"] == 2 && p["proxy"] == 1 && api.Connections >= base+3
	})
	if p := byPort(api); p["client"] < 1 {
		t.Errorf("ports %+v: the client port's count misses the status request's own connection", api.Ports)
	}
	for _, conn := range conns {
		conn.Close()
	}
	testcluster.WaitFor(t, 10*time.Second, "closed connections to leave the counts", func() bool {
		p := byPort(read().Services.API)
		return p["s3"] == 0 && p["proxy"] == 0
	})
}
