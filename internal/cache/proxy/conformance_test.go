package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The minimum conformance to keep (docs/cache.md lists every failing test
// and why): measured 151/157 required, 78/86 optimal; on the fast lane one
// required test fewer (other-date-update: fasthttp writes its own Date),
// and one optimal test (vary-invalidate) failed once in six runs there,
// cause not found yet.
const (
	minRequired     = 151
	minRequiredFast = 150
	minOptimal      = 78
	minOptimalFast  = 77
)

// suiteDir finds the cache-tests suite that scripts/test.sh installs.
func suiteDir(t *testing.T) string {
	dir := os.Getenv("MURE_CACHE_TESTS")
	if dir == "" {
		dir, _ = filepath.Abs("../../../.tools/cache-tests/node_modules/http-cache-tests")
	}
	if _, err := os.Stat(filepath.Join(dir, "cli.mjs")); err != nil {
		t.Skipf("http-cache-tests 0.4.5 is not installed in %s (scripts/test.sh installs it from npm)", dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed (scripts/test.sh installs it)")
	}
	return dir
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestConformance runs the cache-tests suite against the proxy: the
// suite's own origin (server/server.mjs) behind it, its client (cli.mjs)
// in front.
func TestConformance(t *testing.T) {
	suite := suiteDir(t)
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	port := strconv.Itoa(freePort(t))
	srv := exec.CommandContext(ctx, "node", "server/server.mjs")
	srv.Dir = suite
	srv.Env = append(os.Environ(), "npm_config_port="+port, "npm_config_protocol=http", "npm_config_pidfile="+filepath.Join(tmp, "server.pid"))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	originURL := "http://127.0.0.1:" + port
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the suite's origin did not listen on %s", port)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Both listeners: net/http (--proxy) and the fast lane (--proxy-fast).
	for _, lane := range []string{"net/http", "fast"} {
		t.Run(lane, func(t *testing.T) {
			p, h := proxyForURL(t, originURL, t.TempDir(), Limits{})
			base := p.URL
			if lane == "fast" {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				fl := newFastLane(h)
				fl.start(ln, slog.New(slog.DiscardHandler))
				t.Cleanup(func() { fl.shutdown(context.Background()) })
				base = "http://" + ln.Addr().String()
			}
			cli := exec.CommandContext(ctx, "node", "--no-warnings", "cli.mjs")
			cli.Dir = suite
			cli.Env = append(os.Environ(), "npm_config_base="+base, "npm_package_config_id=")
			results, err := cli.Output()
			if err != nil {
				t.Fatalf("cli.mjs: %v", err)
			}
			resultsFile := filepath.Join(tmp, "results.json")
			if err := os.WriteFile(resultsFile, results, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.CommandContext(ctx, "node", "testdata/score.mjs", suite, resultsFile).Output()
			if err != nil {
				t.Fatalf("score: %v", err)
			}
			var score struct {
				Required, Optimal, Check [2]int
				Failed                   []string
			}
			if err := json.Unmarshal(out, &score); err != nil {
				t.Fatalf("score %q: %v", out, err)
			}
			t.Logf("cache-tests: required %d/%d, optimal %d/%d, check %d/%d", score.Required[0], score.Required[1],
				score.Optimal[0], score.Optimal[1], score.Check[0], score.Check[1])
			for _, f := range score.Failed {
				t.Log("failed:", f)
			}
			minReq, minOpt := minRequired, minOptimal
			if lane == "fast" {
				minReq, minOpt = minRequiredFast, minOptimalFast
			}
			if score.Required[0] < minReq || score.Optimal[0] < minOpt {
				t.Errorf("conformance fell: required %d (keep ≥ %d), optimal %d (keep ≥ %d)", score.Required[0], minReq, score.Optimal[0], minOpt)
			}
		})
	}
}
