package systest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/history"
	"github.com/mure-dev/mure/internal/monitor"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestMonitoringPort: with the client port's only admission slot held by a
// slow reader and its connection limit reached, the monitoring port
// (--ui-addr) still answers the dashboard (login, view, event stream),
// /history, /metrics, /status and the health probes, with the client
// API's authentication (every route, the guard's own check or the
// dashboard's cookie, refuses a request without a credential); it serves
// nothing else
// (docs/decisions/0044-dashboard-under-overload.md).
func TestMonitoringPort(t *testing.T) {
	const maxConns = 8
	c := secured(t, 1, func(cfg *node.Config) {
		cfg.UIAddr = "127.0.0.1:0"
		cfg.MaxInFlight, cfg.MaxQueue, cfg.MaxConns, cfg.MaxBody = 1, -1, maxConns, 64<<20
	})
	addr, ui := c.HTTPAddr(0), c.Nodes[0].UIAddr()
	if _, err := c.Client().Put(ctxT(t), "big", bytes.NewReader(bytes.Repeat([]byte("x"), 32<<20)), nil); err != nil {
		t.Fatal(err)
	}
	// A reader that never reads holds the only slot; idle connections
	// fill the client port's connection limit.
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := range maxConns {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
		if i == 0 {
			fmt.Fprintf(conn, "GET /files/big HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", staticAdmin)
		}
	}
	testcluster.WaitFor(t, 10*time.Second, "the slot taken, and a point of the node in its history", func() bool {
		code, b := getWith(t, ui, "/metrics", bearer("scrape-me"))
		if code != http.StatusOK || !bytes.Contains(b, []byte("mure_admission_in_flight 1")) {
			return false
		}
		code, b = getWith(t, ui, "/history", bearer(staticAdmin))
		return code == http.StatusOK && bytes.Contains(b, []byte(`"fine":[[`))
	})
	// The client port answers a new connection with 503 at once, before
	// any request.
	refused, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = refused.SetReadDeadline(time.Now().Add(10 * time.Second))
	first, _ := bufio.NewReader(refused).ReadString('\n')
	refused.Close()
	if !strings.HasPrefix(first, "HTTP/1.1 503") {
		t.Fatalf("client port with its connections all taken: %q, want 503", first)
	}

	for _, tc := range []struct {
		path, authz string
		want        int
		body        string // in the answer
	}{
		{"/healthz", "", http.StatusOK, `"ok"`},
		{"/readyz", "", http.StatusOK, `"ready"`},
		{"/status", bearer(staticAdmin), http.StatusOK, `"ui": "` + ui + `"`},
		{"/status", "", http.StatusUnauthorized, ""},
		{"/metrics", bearer("scrape-me"), http.StatusOK, "mure_admission_in_flight 1"},
		{"/metrics", "", http.StatusUnauthorized, ""},
		{"/history", bearer(staticAdmin), http.StatusOK, c.ID(0)},
		{"/history", "", http.StatusUnauthorized, ""},
		{"/status/files/big", "", http.StatusUnauthorized, ""},
		{"/ui/api/view", "", http.StatusUnauthorized, ""},
		{"/files/big", bearer(staticAdmin), http.StatusNotFound, "the client API is at http://" + addr},
		{"/config", bearer(staticAdmin), http.StatusNotFound, "monitoring port"},
	} {
		t.Run(strings.TrimPrefix(tc.path, "/")+map[bool]string{true: " anonymous"}[tc.authz == ""], func(t *testing.T) {
			code, b := getWith(t, ui, tc.path, tc.authz)
			if code != tc.want || !bytes.Contains(b, []byte(tc.body)) {
				t.Errorf("GET %s: %d %.300s, want %d with %q", tc.path, code, b, tc.want, tc.body)
			}
		})
	}

	t.Run("dashboard", func(t *testing.T) {
		resp, ck := uiCall(t, ui, "POST", "/ui/login", "", url.Values{"token": {staticAdmin}}, nil)
		if resp.StatusCode != http.StatusOK || ck == nil {
			t.Fatalf("login on the monitoring port: %d", resp.StatusCode)
		}
		var v monitor.View
		if _, ok := uiGetWith(t, ui, ck, "/ui/api/view", &v); !ok || v.Node != c.ID(0) || v.User == "" {
			t.Fatalf("view: %+v", v)
		}
		// The event stream's first update: the view and the whole history.
		req, _ := http.NewRequest("GET", "http://"+ui+"/ui/api/events", nil)
		req.AddCookie(ck)
		cl := &http.Client{Timeout: 20 * time.Second}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var up struct {
				View    monitor.View `json:"view"`
				History history.Dump `json:"history"`
			}
			if err := json.Unmarshal([]byte(data), &up); err != nil {
				t.Fatalf("first update: %v", err)
			}
			if up.View.Node != c.ID(0) || up.View.User == "" || len(up.History.Nodes[c.ID(0)].Fine) == 0 {
				t.Fatalf("first update: view of %q for %q, %d points of the node", up.View.Node, up.View.User, len(up.History.Nodes[c.ID(0)].Fine))
			}
			return
		}
		t.Fatalf("the stream ended without an update: %v", sc.Err())
	})
}

// getWith sends GET path to addr with the Authorization authz (none: "")
// and returns the status and the body.
func getWith(t *testing.T, addr, path, authz string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := bare.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// uiGetWith decodes GET path on the dashboard at addr, with the session
// cookie ck, into v; it returns the body (false: not 200 or not JSON).
func uiGetWith(t *testing.T, addr string, ck *http.Cookie, path string, v any) ([]byte, bool) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	req.AddCookie(ck)
	resp, err := bare.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return b, false
	}
	return b, json.Unmarshal(b, v) == nil
}
