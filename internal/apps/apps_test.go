package apps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// patience bounds every wait for something the test expects; it is only
// reached when the test fails. It is well below the 30 s the runaway
// programs sleep, so a program that was not stopped fails the test.
const patience = 15 * time.Second

// script writes an executable /bin/sh program into dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// serve mounts the routes of apps made from cfg on a test server.
func serve(t *testing.T, cfg Config) (*prometheus.Registry, *httptest.Server) {
	t.Helper()
	reg := prometheus.NewRegistry()
	a, err := New(cfg, slog.New(slog.NewTextHandler(t.Output(), nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	mux := http.NewServeMux()
	a.Routes(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return reg, srv
}

// requests returns mure_app_requests_total{app, class}.
func requests(t *testing.T, reg *prometheus.Registry, app, class string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "mure_app_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["app"] == app && labels["class"] == class {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

type answer struct {
	status int
	ctype  string
	body   string
	err    errorBody
}

type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func do(t *testing.T, ctx context.Context, method, url string, body io.Reader, header http.Header) (answer, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: string(b)}
	if strings.HasPrefix(a.ctype, "application/json") {
		_ = json.Unmarshal(b, &a.err)
	}
	return a, err
}

func TestCGI(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "hello", "printf 'Content-Type: text/plain\\n\\nhello\\n'\n")
	script(t, dir, "env", `printf 'Content-Type: text/plain\n\n'
printf 'node=%s query=%s path=%s script=%s method=%s auth=%s' "$MURE_NODE" "$QUERY_STRING" "$PATH_INFO" "$SCRIPT_NAME" "$REQUEST_METHOD" "$HTTP_AUTHORIZATION"
`)
	script(t, dir, "echo", `printf 'Content-Type: application/octet-stream\n\n'
printf 'len=%s:' "$CONTENT_LENGTH"
cat
`)
	script(t, dir, "teapot", "printf 'Status: 418 Teapot\\nContent-Type: text/plain\\n\\nshort and stout'\n")
	script(t, dir, "silent", "echo oops >&2\nexit 1\n")
	if err := os.WriteFile(filepath.Join(dir, "plain.txt"), []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	reg, srv := serve(t, Config{CGIDir: dir, NodeID: "n1", Token: "sekret"})

	tests := []struct {
		name     string
		method   string
		path     string
		body     io.Reader
		header   http.Header
		status   int
		wantBody string // exact, when set
		wantCode string // JSON error code, when set
		wantMsg  string // part of the JSON error message
	}{
		{name: "output", path: "/cgi/hello", status: 200, wantBody: "hello\n"},
		{name: "env", path: "/cgi/env/a/b?x=1&y=two", status: 200,
			wantBody: "node=n1 query=x=1&y=two path=/a/b script=/cgi/env method=GET auth="},
		{name: "node token not passed on", path: "/cgi/env", header: http.Header{"Authorization": {"Bearer sekret"}}, status: 200,
			wantBody: "node=n1 query= path= script=/cgi/env method=GET auth="},
		{name: "other credentials passed on", path: "/cgi/env", header: http.Header{"Authorization": {"Basic dXM6cHc="}}, status: 200,
			wantBody: "node=n1 query= path= script=/cgi/env method=GET auth=Basic dXM6cHc="},
		{name: "post body", method: "POST", path: "/cgi/echo", body: strings.NewReader("some data\nmore"), status: 200,
			wantBody: "len=14:some data\nmore"},
		{name: "program's status", path: "/cgi/teapot", status: 418, wantBody: "short and stout"},
		{name: "no CGI answer", path: "/cgi/silent", status: 502, wantCode: "bad_gateway", wantMsg: `"silent"`},
		{name: "chunked body", method: "POST", path: "/cgi/echo", body: io.MultiReader(strings.NewReader("x")), status: 411, wantCode: "bad_request"},
		{name: "no name", path: "/cgi/", status: 400, wantCode: "bad_path", wantMsg: "/cgi/NAME"},
		{name: "hidden", path: "/cgi/.hello", status: 400, wantCode: "bad_path", wantMsg: "leading"},
		{name: "dot dot", path: "/cgi/a..b", status: 400, wantCode: "bad_path", wantMsg: ".."},
		{name: "space", path: "/cgi/a%20b", status: 400, wantCode: "bad_path", wantMsg: "letters"},
		{name: "dollar", path: "/cgi/a$b", status: 400, wantCode: "bad_path", wantMsg: "letters"},
		{name: "missing", path: "/cgi/nope/x", status: 404, wantCode: "not_found", wantMsg: `"nope"`},
		{name: "not executable", path: "/cgi/plain.txt", status: 404, wantCode: "not_found", wantMsg: `"plain.txt" is not executable`},
		{name: "directory", path: "/cgi/sub", status: 404, wantCode: "not_found", wantMsg: `"sub"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			got, err := do(t, t.Context(), method, srv.URL+tc.path, tc.body, tc.header)
			if err != nil {
				t.Fatal(err)
			}
			if got.status != tc.status {
				t.Fatalf("status %d, want %d (body %q)", got.status, tc.status, got.body)
			}
			if tc.wantBody != "" && got.body != tc.wantBody {
				t.Errorf("body %q, want %q", got.body, tc.wantBody)
			}
			if tc.wantCode != "" {
				if got.ctype != "application/json" || got.err.Code != tc.wantCode {
					t.Errorf("got %s %q, want a JSON error with code %q", got.ctype, got.body, tc.wantCode)
				}
				if !strings.Contains(got.err.Error, tc.wantMsg) {
					t.Errorf("message %q does not say %q", got.err.Error, tc.wantMsg)
				}
			}
		})
	}
	for _, c := range []struct {
		app, class string
		want       float64
	}{{"cgi/hello", "2xx", 1}, {"cgi/echo", "2xx", 1}, {"cgi/echo", "4xx", 1}, {"cgi/silent", "5xx", 1}, {"cgi", "4xx", 8}} {
		if n := requests(t, reg, c.app, c.class); n != c.want {
			t.Errorf("mure_app_requests_total{app=%s,class=%s} = %v, want %v", c.app, c.class, n, c.want)
		}
	}
}

// TestCGIStop checks that a program is killed, with what it started,
// when it runs too long or its client leaves.
func TestCGIStop(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("stopping CGI programs needs /proc")
	}
	dir := t.TempDir()
	// Each program notes its shell's and its sleep's process IDs, then
	// waits for the sleep.
	runaway := func(name, first string) {
		script(t, dir, name, fmt.Sprintf(`%s
echo $$ > %[2]s/%[3]s.pids
sleep 30 &
echo $! >> %[2]s/%[3]s.pids
wait
`, first, dir, name))
	}
	runaway("slow", "")
	runaway("cut", "printf 'Content-Type: text/plain\\n\\nbegun'")
	runaway("left", "")

	tests := []struct {
		name    string
		timeout time.Duration
		leave   bool // the client goes away once the program runs
		check   func(t *testing.T, got answer, err error)
	}{
		{name: "slow", timeout: 300 * time.Millisecond, check: func(t *testing.T, got answer, err error) {
			if err != nil || got.status != http.StatusGatewayTimeout || got.err.Code != "gateway_timeout" || !strings.Contains(got.err.Error, "--cgi-timeout") {
				t.Errorf("got %+v, %v; want 504 gateway_timeout naming --cgi-timeout", got, err)
			}
		}},
		{name: "cut", timeout: 300 * time.Millisecond, check: func(t *testing.T, got answer, err error) {
			if err == nil {
				t.Errorf("got %+v; want the answer cut (a read error)", got)
			}
		}},
		{name: "left", timeout: time.Minute, leave: true, check: func(t *testing.T, got answer, err error) {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("got %+v, %v; want the client's cancellation", got, err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := serve(t, Config{CGIDir: dir, CGITimeout: tc.timeout})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			type result struct {
				got answer
				err error
			}
			done := make(chan result, 1)
			go func() {
				got, err := do(t, ctx, http.MethodGet, srv.URL+"/cgi/"+tc.name, nil, nil)
				done <- result{got, err}
			}()
			pids := waitPIDs(t, filepath.Join(dir, tc.name+".pids"))
			if tc.leave {
				cancel()
			}
			select {
			case r := <-done:
				tc.check(t, r.got, r.err)
			case <-time.After(patience):
				t.Fatal("no answer: the program was not stopped")
			}
			for _, pid := range pids {
				waitFor(t, fmt.Sprintf("process %d to end", pid), func() bool { return !alive(pid) })
			}
		})
	}
}

// waitPIDs waits until the program has written its two process IDs.
func waitPIDs(t *testing.T, path string) []int {
	t.Helper()
	var pids []int
	waitFor(t, "the program's process IDs in "+path, func() bool {
		b, _ := os.ReadFile(path)
		pids = pids[:0]
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return len(pids) == 2 && strings.HasSuffix(string(b), "\n")
	})
	return pids
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid is a process that has not exited (zombies
// count as exited).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

func TestProxy(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "path=%s query=%s xff=%s xfh=%s xfp=%s auth=%s",
			r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("X-Forwarded-For"), r.Header.Get("X-Forwarded-Host"),
			r.Header.Get("X-Forwarded-Prefix"), r.Header.Get("Authorization"))
	}))
	t.Cleanup(app.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // nothing listens there any more

	cfg := Config{Token: "sekret"}
	for _, s := range []string{"/shop/=" + app.URL, "/base/=" + app.URL + "/root/", "/gone/=" + gone.URL} {
		p, err := ParseProxy(s)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Proxies = append(cfg.Proxies, p)
	}
	reg, srv := serve(t, cfg)
	host := strings.TrimPrefix(srv.URL, "http://")

	tests := []struct {
		name     string
		path     string
		header   http.Header
		status   int
		wantBody string
		wantCode string
		wantMsg  []string
	}{
		{name: "prefix stripped", path: "/shop/x/y?q=1", status: 200,
			wantBody: "path=/x/y query=q=1 xff=127.0.0.1 xfh=" + host + " xfp=/shop auth="},
		{name: "prefix itself", path: "/shop/", status: 200,
			wantBody: "path=/ query= xff=127.0.0.1 xfh=" + host + " xfp=/shop auth="},
		{name: "prefix without slash redirects", path: "/shop", status: 200,
			wantBody: "path=/ query= xff=127.0.0.1 xfh=" + host + " xfp=/shop auth="},
		{name: "escaped path kept", path: "/shop/a%2Fb", status: 200,
			wantBody: "path=/a%2Fb query= xff=127.0.0.1 xfh=" + host + " xfp=/shop auth="},
		{name: "target path", path: "/base/x", status: 200,
			wantBody: "path=/root/x query= xff=127.0.0.1 xfh=" + host + " xfp=/base auth="},
		{name: "client's X-Forwarded-For extended", path: "/shop/", header: http.Header{"X-Forwarded-For": {"10.0.0.9"}}, status: 200,
			wantBody: "path=/ query= xff=10.0.0.9, 127.0.0.1 xfh=" + host + " xfp=/shop auth="},
		{name: "node token not passed on", path: "/shop/", header: http.Header{"Authorization": {"Bearer sekret"}}, status: 200,
			wantBody: "path=/ query= xff=127.0.0.1 xfh=" + host + " xfp=/shop auth="},
		{name: "app's credentials passed on", path: "/shop/", header: http.Header{"Authorization": {"Bearer app"}}, status: 200,
			wantBody: "path=/ query= xff=127.0.0.1 xfh=" + host + " xfp=/shop auth=Bearer app"},
		{name: "dead target", path: "/gone/x", status: 502, wantCode: "bad_gateway",
			wantMsg: []string{"app gone", gone.URL, "refused"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := do(t, t.Context(), http.MethodGet, srv.URL+tc.path, nil, tc.header)
			if err != nil {
				t.Fatal(err)
			}
			if got.status != tc.status {
				t.Fatalf("status %d, want %d (body %q)", got.status, tc.status, got.body)
			}
			if tc.wantBody != "" && got.body != tc.wantBody {
				t.Errorf("body %q,\nwant %q", got.body, tc.wantBody)
			}
			if tc.wantCode != "" && (got.ctype != "application/json" || got.err.Code != tc.wantCode) {
				t.Errorf("got %s %q, want a JSON error with code %q", got.ctype, got.body, tc.wantCode)
			}
			for _, m := range tc.wantMsg {
				if !strings.Contains(got.err.Error, m) {
					t.Errorf("message %q does not say %q", got.err.Error, m)
				}
			}
		})
	}
	if n := requests(t, reg, "shop", "2xx"); n != 7 {
		t.Errorf("mure_app_requests_total{app=shop,class=2xx} = %v, want 7", n)
	}
	if n := requests(t, reg, "gone", "5xx"); n != 1 {
		t.Errorf("mure_app_requests_total{app=gone,class=5xx} = %v, want 1", n)
	}
}

func TestParseProxy(t *testing.T) {
	tests := []struct {
		in      string
		prefix  string // when valid
		target  string
		wantErr string
	}{
		{in: "/shop/=http://127.0.0.1:9000", prefix: "/shop/", target: "http://127.0.0.1:9000"},
		{in: "/a/b-c_d.e~/=https://app.local/base/", prefix: "/a/b-c_d.e~/", target: "https://app.local/base/"},
		{in: "/shop/", wantErr: "PREFIX=URL"},
		{in: "shop/=http://h", wantErr: "start and end with '/'"},
		{in: "/shop=http://h", wantErr: "start and end with '/'"},
		{in: "/=http://h", wantErr: "start and end with '/'"},
		{in: "/files/=http://h", wantErr: "node's own API"},
		{in: "/files/x/=http://h", wantErr: "node's own API"},
		{in: "/status/=http://h", wantErr: "node's own API"},
		{in: "/metrics/=http://h", wantErr: "node's own API"},
		{in: "/cgi/=http://h", wantErr: "node's own API"},
		{in: "/nodes/=http://h", wantErr: "node's own API"},
		{in: "/debug/=http://h", wantErr: "node's own API"},
		{in: "/a//b/=http://h", wantErr: "segments"},
		{in: "/a/../=http://h", wantErr: "segments"},
		{in: "/a b/=http://h", wantErr: "segments"},
		{in: "/{x}/=http://h", wantErr: "segments"},
		{in: "/shop/=ftp://h", wantErr: "http:// or https://"},
		{in: "/shop/=127.0.0.1:9000", wantErr: "target"},
		{in: "/shop/=http://", wantErr: "no host"},
		{in: "/shop/=http://h/?q=1", wantErr: "query"},
		{in: "/shop/=http://u:p@h/", wantErr: "user info"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			p, err := ParseProxy(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Prefix != tc.prefix || p.Target.String() != tc.target {
				t.Errorf("got %s → %s, want %s → %s", p.Prefix, p.Target, tc.prefix, tc.target)
			}
		})
	}
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse("http://127.0.0.1:9000")
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "nothing", cfg: Config{}},
		{name: "cgi dir", cfg: Config{CGIDir: dir}},
		{name: "missing cgi dir", cfg: Config{CGIDir: filepath.Join(dir, "nope")}, wantErr: "--cgi-dir " + filepath.Join(dir, "nope") + " does not exist"},
		{name: "cgi dir is a file", cfg: Config{CGIDir: file}, wantErr: "--cgi-dir " + file + " is not a directory"},
		{name: "negative timeout", cfg: Config{CGITimeout: -time.Second}, wantErr: "--cgi-timeout"},
		{name: "prefix twice", cfg: Config{Proxies: []Proxy{{"/a/", target}, {"/a/", target}}}, wantErr: "twice"},
		{name: "bad proxy", cfg: Config{Proxies: []Proxy{{"/files/", target}}}, wantErr: "--app /files/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(tc.cfg, nil, nil)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				a.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// TestCGINice: with CGINice the program runs at that niceness (below the
// node's own priority) and still sees itself as the script.
func TestCGINice(t *testing.T) {
	dir := t.TempDir()
	path := script(t, dir, "nice", `printf 'Content-Type: text/plain\n\n'
printf 'nice=%s script=%s' "$(nice)" "$SCRIPT_FILENAME"
`)
	base, err := exec.Command("nice").Output()
	if err != nil {
		t.Skip("no nice(1):", err)
	}
	baseNice, _ := strconv.Atoi(strings.TrimSpace(string(base)))
	for _, tc := range []struct {
		name string
		nice int
		want int
	}{
		{"unchanged", 0, baseNice},
		{"lowered", 10, min(baseNice+10, 19)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := serve(t, Config{CGIDir: dir, CGINice: tc.nice})
			resp, err := http.Get(srv.URL + "/cgi/nice")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := fmt.Sprintf("nice=%d script=%s", tc.want, path); string(b) != want {
				t.Fatalf("got %q, want %q", b, want)
			}
		})
	}
}

// TestCGIMaxRunning: beyond CGIMaxRunning, a request waits for a running
// program to end before its own starts.
func TestCGIMaxRunning(t *testing.T) {
	for _, tc := range []struct {
		slots     int
		wantAfter string // whether the second program started after the first ended
	}{{1, "yes"}, {2, "no"}} {
		t.Run(strconv.Itoa(tc.slots), func(t *testing.T) {
			dir := t.TempDir()
			script(t, dir, "hold", fmt.Sprintf(`d=%s
touch "$d/started.$QUERY_STRING"
after=no; [ -f "$d/ended.1" ] && after=yes
while [ "$QUERY_STRING" = 1 ] && [ ! -f "$d/go" ]; do sleep 0.02; done
touch "$d/ended.$QUERY_STRING"
printf 'Content-Type: text/plain\n\nafter=%%s' "$after"
`, dir))
			reg, srv := serve(t, Config{CGIDir: dir, CGIMaxRunning: tc.slots})
			get := func(q string, out chan<- string) {
				resp, err := http.Get(srv.URL + "/cgi/hold?" + q)
				if err != nil {
					out <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				out <- string(b)
			}
			first, second := make(chan string, 1), make(chan string, 1)
			go get("1", first)
			waitFile(t, filepath.Join(dir, "started.1"))
			go get("2", second)
			if tc.slots == 1 {
				waitFor(t, "the second request to wait for a slot", func() bool { return gaugeValue(t, reg, "mure_app_cgi_waiting") == 1 })
			} else {
				waitFile(t, filepath.Join(dir, "started.2"))
			}
			os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
			<-first
			if got := <-second; got != "after="+tc.wantAfter {
				t.Fatalf("second program: %q, want after=%s", got, tc.wantAfter)
			}
		})
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	waitFor(t, path, func() bool { _, err := os.Stat(path); return err == nil })
}

// gaugeValue reads an unlabelled gauge from reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}
