package proxy

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startNginx runs nginx (from Debian; scripts/test.sh installs it) as an
// origin serving dir on a free loopback port, and returns its URL.
func startNginx(t *testing.T, dir string) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/nginx"); err != nil {
			t.Skip("nginx is not installed (scripts/test.sh installs it)")
		}
	}
	port := freePort(t)
	conf := filepath.Join(t.TempDir(), "nginx.conf")
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // the workers read the test's private directory
	}
	body := fmt.Sprintf(`%s
daemon off;
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path %[2]s/body;
  proxy_temp_path %[2]s/proxy;
  fastcgi_temp_path %[2]s/fastcgi;
  uwsgi_temp_path %[2]s/uwsgi;
  scgi_temp_path %[2]s/scgi;
  server {
    listen 127.0.0.1:%[3]d;
    root %[4]s;
    location /nc/ { add_header Cache-Control no-cache; }
  }
}
`, user, filepath.Dir(conf), port, dir)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", conf, "-e", filepath.Join(filepath.Dir(conf), "error.log"))
	if err := cmd.Start(); err != nil {
		t.Skipf("nginx did not start: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(filepath.Dir(conf), "error.log"))
			t.Fatalf("nginx did not listen: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNginxOrigin: a real origin's validators and dates through the
// proxy: heuristic freshness from Last-Modified, validation with its
// ETag (a 304 from nginx), a client's conditional request and a range
// answered from the stored object.
func TestNginxOrigin(t *testing.T) {
	www := t.TempDir()
	for _, f := range []string{"old.txt", "nc/page.txt"} {
		p := filepath.Join(www, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("content of "+f), 0o644); err != nil {
			t.Fatal(err)
		}
		// modified ten hours ago: a heuristic lifetime of an hour
		old := time.Now().Add(-10 * time.Hour)
		os.Chtimes(p, old, old)
	}
	originURL := startNginx(t, www)
	p, _ := proxyForURL(t, originURL, t.TempDir(), Limits{})
	steps := []struct {
		name, path string
		hdr        []string
		status     int
		cacheStat  string
	}{
		{"miss", "/old.txt", nil, 200, "fwd=uri-miss; fwd-status=200; stored"},
		{"heuristic hit", "/old.txt", nil, 200, "hit"},
		{"client's conditional from the cache", "/old.txt", []string{"If-Modified-Since", time.Now().UTC().Format(http.TimeFormat)}, 304, "hit"},
		{"range from the cache", "/old.txt", []string{"Range", "bytes=0-6"}, 206, "hit"},
		{"no-cache miss", "/nc/page.txt", nil, 200, "stored"},
		{"no-cache validated by nginx", "/nc/page.txt", nil, 200, "fwd=stale; fwd-status=304"},
	}
	for _, s := range steps {
		resp, body := fetch(t, "GET", p.URL+s.path, s.hdr...)
		st := resp.Header.Get("Cache-Status")
		if resp.StatusCode != s.status || !strings.Contains(st, s.cacheStat) {
			t.Errorf("%s: %d %q, want %d and %q", s.name, resp.StatusCode, st, s.status, s.cacheStat)
		}
		if s.status == 200 && !strings.HasPrefix(body, "content of ") {
			t.Errorf("%s: body %q", s.name, body)
		}
		if s.status == 206 && body != "content" {
			t.Errorf("%s: body %q", s.name, body)
		}
	}
}
