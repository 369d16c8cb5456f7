package systest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/dispatch"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/testcluster"
)

// dialFrom opens a TCP connection to addr from a chosen loopback source
// address (127.0.0.0/8 is all ours), so that tests can play several
// clients.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, src, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// politeGet is one well-behaved client's request through the front door
// from src: it must be answered (a redirect or a node's 200).
func politeGet(t *testing.T, src, front string) int {
	t.Helper()
	c := dialFrom(t, src, front)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: mure\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a polite client from %s got no answer while others misbehave: %v", src, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// readAnswer reads one HTTP answer on c (nil if the server closed first).
func readAnswer(c net.Conn) (*http.Response, map[string]string) {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, nil
	}
	var e map[string]string
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	return resp, e
}

// waitClosed waits until the server closes c.
func waitClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%s: the server kept the connection open", what)
	}
}

// TestFrontDoorHostileClients: slow and half-open clients, a flood of new
// connections from one address and malformed requests are each bounded by
// a timeout or a limit, get a clear error where HTTP allows, and do not
// stop a polite client from another address being served — in both modes.
func TestFrontDoorHostileClients(t *testing.T) {
	for _, mode := range []string{frontdoor.ModeRedirect, frontdoor.ModeProxy} {
		t.Run(mode, func(t *testing.T) {
			const perClient = 20
			c, front := frontCluster(t, 2, frontdoor.Config{Mode: mode, Policy: dispatch.NameRoundRobin,
				MaxConnsPerClient: perClient, MaxConns: 200, HeaderTimeout: 300 * time.Millisecond})
			ok := func(code int) bool {
				return code == http.StatusOK || code == http.StatusTemporaryRedirect
			}

			// Slowloris: half a request, then silence, from 127.0.0.2.
			var slow []net.Conn
			for range perClient {
				s := dialFrom(t, "127.0.0.2", front)
				fmt.Fprintf(s, "GET /healthz HTTP/1.1\r\nHost: mure\r\nX-Slow: ")
				slow = append(slow, s)
			}
			if code := politeGet(t, "127.0.0.9", front); !ok(code) {
				t.Fatalf("polite client during slowloris: %d", code)
			}
			if mode == frontdoor.ModeRedirect {
				// The front door's header timeout ends them.
				for _, s := range slow {
					waitClosed(t, s, "slowloris")
				}
			}

			// A flood from one address: beyond its limit each connection
			// is refused at once with a 503 that says why.
			flooder := "127.0.0.3"
			var held []net.Conn
			for range perClient {
				held = append(held, dialFrom(t, flooder, front))
			}
			refused := 0
			for range 50 {
				f := dialFrom(t, flooder, front)
				resp, e := readAnswer(f)
				if resp != nil && resp.StatusCode == http.StatusServiceUnavailable && e["code"] == "overloaded" &&
					strings.Contains(e["error"], "client address") && resp.Header.Get("Retry-After") != "" {
					refused++
				}
			}
			if refused != 50 {
				t.Fatalf("%d of 50 connections over the per-client limit were refused with a 503", refused)
			}
			if code := politeGet(t, "127.0.0.9", front); !ok(code) {
				t.Fatalf("polite client during a flood: %d", code)
			}
			for _, h := range held {
				h.Close()
			}
			st := c.Nodes[holderOf(t, c)].Door().Status()
			if st.Rejected["max_conns_per_client"] < 50 {
				t.Fatalf("rejections counted: %v", st.Rejected)
			}

			// Malformed requests get a 400 (from the front door in redirect
			// mode, from the node in proxy mode); oversize headers too.
			for _, bad := range []string{
				"NOT HTTP AT ALL\r\n\r\n",
				"GET /healthz HTTP/1.1\r\nHost: mure\r\nBad Header Line\r\n\r\n",
				"GET /healthz HTTP/1.1\r\nHost: mure\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n",
			} {
				m := dialFrom(t, "127.0.0.4", front)
				go io.WriteString(m, bad) // the server may answer before reading it all
				resp, _ := readAnswer(m)
				if resp == nil || resp.StatusCode < 400 || resp.StatusCode >= 500 {
					t.Fatalf("malformed request %.30q: answer %v, want a 4xx", bad, resp)
				}
			}
			if code := politeGet(t, "127.0.0.9", front); !ok(code) {
				t.Fatalf("polite client after malformed requests: %d", code)
			}
			testcluster.WaitFor(t, 15*time.Second, "the front door's connections released", func() bool {
				return c.Nodes[holderOf(t, c)].Door().Status().Open <= perClient // the slow ones, in proxy mode
			})
		})
	}
}
