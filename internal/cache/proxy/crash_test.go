package proxy

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/cache/tier"
	"github.com/mure-dev/mure/internal/service"
)

// TestMain lets the test binary serve as a proxy process that a test
// kills with SIGKILL: MURE_PROXY_CHILD="DIR ORIGIN" serves a proxy with
// its disk tier in DIR (fsync on) and prints its address.
func TestMain(m *testing.M) {
	if spec := os.Getenv("MURE_PROXY_CHILD"); spec != "" {
		dir, origin, _ := strings.Cut(spec, " ")
		childProxy(dir, origin)
		return
	}
	os.Exit(m.Run())
}

func childProxy(dir, origin string) {
	u, _ := url.Parse(origin)
	tiers, err := tier.Open(tier.Config{Dir: dir})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	h, err := NewHandler(Config{Origins: []Origin{{URL: u}}}, tiers, service.Env{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	srv := httptest.NewServer(h)
	fmt.Println(srv.URL)
	select {} // until killed
}

// startChild starts a proxy process and returns its URL.
func startChild(t *testing.T, dir, origin string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MURE_PROXY_CHILD="+dir+" "+origin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		t.Fatalf("child proxy: %q %v", line, err)
	}
	return cmd, strings.TrimSpace(line)
}

// TestKillDuringFill kills a proxy process with SIGKILL while an origin
// is halfway through a body: nothing of it may be found after a restart;
// an object whose file was written before the kill is found again.
func TestKillDuringFill(t *testing.T) {
	halfway := make(chan struct{})
	release := make(chan struct{})
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		if r.URL.Path == "/whole" {
			io.WriteString(w, "stored before the kill")
			return
		}
		w.Header().Set("Content-Length", "200000")
		w.Write(make([]byte, 100000))
		w.(http.Flusher).Flush()
		close(halfway)
		<-release
	})
	defer close(release)
	dir := t.TempDir()
	child, purl := startChild(t, dir, o.URL)
	if _, body := fetch(t, "GET", purl+"/whole"); body != "stored before the kill" {
		t.Fatalf("whole object: %q", body)
	}
	// The disk write follows the answer: wait until it has landed.
	waitFor(t, "the whole object's file", func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, "objects", "*", "*"))
		return len(files) == 1
	})
	go func() {
		resp, err := http.Get(purl + "/half")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	select {
	case <-halfway:
	case <-time.After(10 * time.Second):
		t.Fatal("the origin never sent half the body")
	}
	child.Process.Kill()
	child.Wait()

	tiers, err := tier.Open(tier.Config{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tiers.Close()
	if st := tiers.Stats(); st.Objects != 1 {
		t.Errorf("after kill -9: %d objects, want 1 (the whole one)", st.Objects)
	}
	if n := len(tiers.Variants("_ /half")); n != 0 {
		t.Error("the half-filled object is in the cache")
	}
	vs := tiers.Variants("_ /whole")
	if len(vs) != 1 {
		t.Fatal("the whole object was lost")
	}
	if obj, err := tiers.Get(vs[0]); err != nil || string(obj.Body) != "stored before the kill" {
		t.Errorf("whole object after the kill: %v", err)
	}
	left, _ := os.ReadDir(filepath.Join(dir, "tmp"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %d", len(left))
	}
}
