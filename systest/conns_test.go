package systest

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestMaxConns: a node holding --max-conns client connections answers the
// next one at once with a 503 in JSON that says why, counts it, and serves
// new connections again once one has closed. Idle connections cannot take
// a node's memory and descriptors without bound.
func TestMaxConns(t *testing.T) {
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) { cfg.MaxConns = 3 }})
	c.WaitReady(0)
	addr := c.HTTPAddr(0)
	var idle []net.Conn
	for range 3 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		idle = append(idle, conn)
	}
	// The listener counts a connection once it has accepted it: poll.
	var status int
	var body string
	testcluster.WaitFor(t, 10*time.Second, "a connection over the limit to be refused", func() bool {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(2 * time.Second))
		io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		status, body = resp.StatusCode, string(b)
		return status == http.StatusServiceUnavailable
	})
	var e struct{ Error, Code string }
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code != "overloaded" || !strings.Contains(e.Error, "3 connections open") {
		t.Fatalf("refusal %q: want JSON with code overloaded naming the limit", body)
	}
	idle[0].Close()
	testcluster.WaitFor(t, 10*time.Second, "a new connection to be served after one closed", func() bool {
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get("http://" + addr + "/healthz")
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
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(line, "mure_client_connections_refused_total ") {
				return line != "mure_client_connections_refused_total 0"
			}
		}
		return false
	})
}
