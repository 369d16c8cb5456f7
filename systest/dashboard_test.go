package systest

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/certs"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/monitor"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// uiCall sends a dashboard request with the given cookie (none: "") and
// extra headers; it returns the answer and the session cookie it set.
func uiCall(t *testing.T, addr, method, path, cookie string, form url.Values, hdr map[string]string) (*http.Response, *http.Cookie) {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, "http://"+addr+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "mure_ui", Value: cookie})
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	noRedirect := &http.Client{Transport: http.DefaultTransport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == "mure_ui" {
			return resp, c
		}
	}
	return resp, nil
}

// uiGet logs in to the dashboard at addr with token (when it asks for a
// login) and decodes GET path
// into v; it returns the answer's raw body (false: the login or the
// request failed).
func uiGet(t *testing.T, addr, token, path string, v any) ([]byte, bool) {
	t.Helper()
	resp, ck := uiCall(t, addr, "POST", "/ui/login", "", url.Values{"token": {token}}, nil)
	if resp.StatusCode != http.StatusOK {
		return nil, false
	}
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	if ck != nil { // none: the dashboard is open (authentication off)
		req.AddCookie(ck)
	}
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

// TestDashboardLogin: the dashboard's session cookie, its attributes and
// its limits: it opens the dashboard's data only, ends with the user or
// the token, and a cross-site login is refused.
func TestDashboardLogin(t *testing.T) {
	c := secured(t, 1)
	addr := c.HTTPAddr(0)
	mustCall(t, addr, "POST", "/auth/users", bearer(staticAdmin), `{"name":"viewer","password":"viewer-pass-1"}`, http.StatusCreated)
	tok := newToken(t, addr, "viewer", "dash", "1h")
	login := func(f url.Values, hdr map[string]string) (int, *http.Cookie) {
		resp, ck := uiCall(t, addr, "POST", "/ui/login", "", f, hdr)
		return resp.StatusCode, ck
	}
	pw := url.Values{"user": {"viewer"}, "password": {"viewer-pass-1"}}

	for _, tc := range []struct {
		name string
		form url.Values
		hdr  map[string]string
		want int
	}{
		{"wrong password", url.Values{"user": {"viewer"}, "password": {"nope"}}, nil, http.StatusUnauthorized},
		{"unknown user", url.Values{"user": {"mallory"}, "password": {"viewer-pass-1"}}, nil, http.StatusUnauthorized},
		{"nothing", url.Values{}, nil, http.StatusBadRequest},
		{"bad token", url.Values{"token": {"mure_nope"}}, nil, http.StatusUnauthorized},
		{"from another site", pw, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"from another origin", pw, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"password", pw, nil, http.StatusOK},
		{"token", url.Values{"token": {tok}}, nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ck := login(tc.form, tc.hdr)
			if code != tc.want {
				t.Fatalf("login: %d, want %d", code, tc.want)
			}
			if code != http.StatusOK {
				if ck != nil && ck.Value != "" {
					t.Errorf("a refused login set a session cookie")
				}
				return
			}
			if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/ui" || ck.Secure || len(ck.Value) < 40 {
				t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/ui, not Secure without TLS, a long random value", ck)
			}
			if resp, _ := uiCall(t, addr, "GET", "/ui/api/view", ck.Value, nil, nil); resp.StatusCode != http.StatusOK {
				t.Errorf("view with the session: %d", resp.StatusCode)
			}
			// The cookie is the dashboard's only: the client API wants a credential.
			if resp, _ := uiCall(t, addr, "GET", "/status", ck.Value, nil, nil); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("/status with the dashboard's cookie: %d, want 401", resp.StatusCode)
			}
		})
	}

	for _, p := range []string{"/ui/api/view", "/ui/api/history", "/ui/api/events", "/ui/api/sessions"} {
		if resp, _ := uiCall(t, addr, "GET", p, "", nil, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a session: %d, want 401", p, resp.StatusCode)
		}
		if resp, _ := uiCall(t, addr, "GET", p, "forged-session-id", nil, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with a forged session: %d, want 401", p, resp.StatusCode)
		}
	}

	// Logging out, revoking the token, deleting the user: each ends its session.
	_, byPW := login(pw, nil)
	_, byTok := login(url.Values{"token": {tok}}, nil)
	_, byPW2 := login(pw, nil)
	streamEnded := openStream(t, addr, byTok) // an event stream already open ends with its session
	uiCall(t, addr, "POST", "/ui/logout", byPW.Value, nil, nil)
	mustCall(t, addr, "DELETE", "/auth/tokens/viewer/dash", bearer(staticAdmin), "", http.StatusOK)
	select {
	case <-streamEnded:
	case <-time.After(5 * time.Second):
		t.Errorf("token revoked: the event stream it opened still runs after 5 s")
	}
	for name, ck := range map[string]*http.Cookie{"logged out": byPW, "token revoked": byTok} {
		if resp, _ := uiCall(t, addr, "GET", "/ui/api/view", ck.Value, nil, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: view %d, want 401", name, resp.StatusCode)
		}
	}
	if resp, _ := uiCall(t, addr, "GET", "/ui/api/view", byPW2.Value, nil, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("another password session: view %d, want 200", resp.StatusCode)
	}
	mustCall(t, addr, "DELETE", "/auth/users/viewer", bearer(staticAdmin), "", http.StatusOK)
	testcluster.WaitFor(t, 5*time.Second, "the deleted user's session to end", func() bool {
		resp, _ := uiCall(t, addr, "GET", "/ui/api/view", byPW2.Value, nil, nil)
		return resp.StatusCode == http.StatusUnauthorized
	})
}

// openStream opens the dashboard's event stream with the session ck and
// reads it; the channel closes when the stream ends.
func openStream(t *testing.T, addr string, ck *http.Cookie) <-chan struct{} {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/ui/api/events", nil)
	req.AddCookie(ck)
	resp, err := bare.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("events: %d", resp.StatusCode)
	}
	t.Cleanup(func() { resp.Body.Close() })
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	return ended
}

// TestDashboardPages: / sends a browser to /ui/, the page comes with its
// security headers, and the event stream starts with the whole view.
func TestDashboardPages(t *testing.T) {
	c := secured(t, 1)
	addr := c.HTTPAddr(0)
	for _, tc := range []struct {
		path, accept string
		want         int
		location     string
	}{
		{"/", "text/html,application/xhtml+xml", http.StatusFound, "/ui/"},
		{"/", "application/json", http.StatusNotFound, ""},
		{"/ui", "text/html", http.StatusMovedPermanently, "/ui/"},
		{"/ui/", "text/html", http.StatusOK, ""},
		{"/ui/app.js", "*/*", http.StatusOK, ""},
		{"/ui/uPlot.iife.min.js", "*/*", http.StatusOK, ""},
		{"/ui/nothing.js", "*/*", http.StatusNotFound, ""},
	} {
		resp, _ := uiCall(t, addr, "GET", tc.path, "", nil, map[string]string{"Accept": tc.accept})
		if resp.StatusCode != tc.want || resp.Header.Get("Location") != tc.location {
			t.Errorf("GET %s (Accept %s): %d %q, want %d %q", tc.path, tc.accept, resp.StatusCode, resp.Header.Get("Location"), tc.want, tc.location)
		}
		if tc.path == "/ui/" && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("the page's CSP: %q", resp.Header.Get("Content-Security-Policy"))
		}
	}

	_, ck := uiCall(t, addr, "POST", "/ui/login", "", url.Values{"token": {c.Token()}}, nil)
	if ck == nil {
		t.Fatal("no session with the admin token")
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/ui/api/events", nil)
	req.AddCookie(ck)
	resp, err := bare.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	var got struct {
		View    monitor.View    `json:"view"`
		History json.RawMessage `json:"history"`
	}
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if err := json.Unmarshal([]byte(data), &got); err != nil {
				t.Fatalf("event data: %v", err)
			}
			break
		}
	}
	if got.View.Node != c.ID(0) || len(got.View.Members) != 1 || got.View.User != "admin" || !strings.Contains(string(got.History), `"fields"`) {
		t.Errorf("first event: view %+v, history %.200s", got.View, got.History)
	}

	grafanaNamesExported(t, addr)
}

// grafanaNamesExported checks that every metric docs/grafana-dashboard.json
// queries is one the node exports.
func grafanaNamesExported(t *testing.T, addr string) {
	t.Helper()
	dash, err := os.ReadFile("../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, addr, "GET", "/healthz", "", "", http.StatusOK) // a request, so the request histograms exist
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", bearer(staticAdmin))
	resp, err := bare.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	exported := string(body)
	// Counters by label that appear with their first event only.
	later := map[string]bool{"mure_admission_rejected_total": true}
	names := regexp.MustCompile(`mure_[a-z_]+`).FindAllString(string(dash), -1)
	if len(names) < 10 {
		t.Fatalf("the Grafana dashboard queries %d metrics", len(names))
	}
	for _, name := range names {
		if !later[name] && !strings.Contains(exported, "\n"+name) {
			t.Errorf("docs/grafana-dashboard.json queries %s, which the node does not export", name)
		}
	}
}

// TestDashboardShowsFrontDoor: every node's dashboard shows the front
// door of the dispatcher role's holder: its mode, policy and decisions.
func TestDashboardShowsFrontDoor(t *testing.T) {
	c, front := frontCluster(t, 2, frontdoor.Config{Mode: frontdoor.ModeRedirect})
	if resp, err := noFollow().Get("http://" + front + "/healthz"); err == nil { // one decision
		resp.Body.Close()
	}
	for i := range c.Nodes {
		var v struct {
			Dispatcher string           `json:"dispatcher"`
			Front      frontdoor.Status `json:"front"`
		}
		testcluster.WaitFor(t, 10*time.Second, fmt.Sprintf("node %d's view to show the holder's front door with a decision", i), func() bool {
			_, ck := uiCall(t, c.HTTPAddr(i), "POST", "/ui/login", "", url.Values{"token": {c.Token()}}, nil)
			if ck == nil {
				return false
			}
			req, _ := http.NewRequest("GET", "http://"+c.HTTPAddr(i)+"/ui/api/view", nil)
			req.AddCookie(ck)
			resp, err := bare.Do(req)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			if json.NewDecoder(resp.Body).Decode(&v) != nil {
				return false
			}
			var decisions uint64
			for _, n := range v.Front.Decisions {
				decisions += n
			}
			return v.Dispatcher != "" && v.Front.Active && v.Front.Mode == frontdoor.ModeRedirect && v.Front.Addr == front && decisions > 0
		})
	}
}

// TestDashboardOverTLS: a login over TLS gives a Secure cookie, which
// opens the dashboard's data over TLS.
func TestDashboardOverTLS(t *testing.T) {
	dir := t.TempDir()
	if err := certs.InitCA(dir, "test CA"); err != nil {
		t.Fatal(err)
	}
	crt, key := filepath.Join(dir, "n.crt"), filepath.Join(dir, "n.key")
	if err := certs.Issue(dir, []string{"127.0.0.1"}, 1, crt, key); err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) { cfg.TLSCert, cfg.TLSKey = crt, key }})
	pool, err := certs.LoadPool(filepath.Join(dir, certs.CACert))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	base := "https://" + c.HTTPAddr(0)
	resp, err := hc.PostForm(base+"/ui/login", url.Values{"token": {c.Token()}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var ck *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == "mure_ui" {
			ck = k
		}
	}
	if resp.StatusCode != http.StatusOK || ck == nil || !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login over TLS: %d, cookie %+v: want a Secure, HttpOnly, SameSite=Strict one", resp.StatusCode, ck)
	}
	req, _ := http.NewRequest("GET", base+"/ui/api/view", nil)
	req.AddCookie(ck)
	if resp, err = hc.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("view over TLS with the session: %v %v", resp, err)
	}
	resp.Body.Close()
}
