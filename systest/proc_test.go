//go:build linux

package systest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/testcluster"
)

// Tests of nodes running as separate processes of the built binary
// (internal/testcluster/proc.go): kill -9, SIGSTOP/SIGCONT and SIGTERM.

// procCtx is a context for one test phase.
func procCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// putRetry writes path until it is acknowledged, with one idempotency key
// for every attempt (the client retries too), while the cluster is
// changing (a node just died, a leader is being elected).
func putRetry(ctx context.Context, cl *client.Client, path, body string) (retries int, err error) {
	o := &client.PutOptions{IdempotencyKey: fmt.Sprintf("%s-%s-%d", path, body, time.Now().UnixNano())}
	for {
		_, err := cl.Put(ctx, path, strings.NewReader(body), o)
		if err == nil {
			return retries, nil
		}
		if ctx.Err() != nil || !(errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrOutcomeUnknown)) {
			return retries, fmt.Errorf("put %s=%s (after %d retries): %w", path, body, retries, err)
		}
		retries++
		select {
		case <-ctx.Done():
			return retries, fmt.Errorf("put %s=%s: %w (last: %v)", path, body, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// directGet is one GET on addr without following redirects; it returns
// the status, the X-Mure-Sha256 header and the body.
func directGet(ctx context.Context, addr, path string) (int, string, string, error) {
	hc := &http.Client{Timeout: 2 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/files/"+path, nil)
	if err != nil {
		return 0, "", "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Mure-Sha256"), string(b), err
}

func TestProcKillFollowerDuringWrites(t *testing.T) {
	c := testcluster.StartProc(t, 3)
	ctx := procCtx(t, 40*time.Second)
	cl := c.Client(0, 1)
	const versions = 40
	tenth := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		total := 0
		for i := 0; i < versions; i++ {
			r, err := putRetry(ctx, cl, "k", fmt.Sprintf("v%d", i))
			total += r
			if err != nil {
				done <- err
				return
			}
			if i == 9 {
				close(tenth)
			}
		}
		if total > 0 {
			t.Logf("writer: %d retries after unavailable or unknown outcomes", total)
		}
		done <- nil
	}()
	select {
	case <-tenth:
		c.Kill(2) // while the writer goes on
	case err := <-done:
		t.Fatalf("writer stopped before its 10th write: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mustGet(t, c.Client(0), "k", fmt.Sprintf("v%d", versions-1))

	c.Restart(2) // only --data
	c.WaitReady(2)
	// Every acknowledged write is visible on every node: the first read
	// that node 2 answers successfully (itself or by redirecting) is v39.
	want := fmt.Sprintf("v%d", versions-1)
	cl2 := client.New([]string{c.HTTPAddr(2)}, client.WithAttempts(1))
	var lastErr error
	testcluster.WaitFor(t, 10*time.Second, "a successful read of k through node 2", func() bool {
		got, err := readAll(ctx, cl2, "k")
		if err != nil {
			lastErr = err
			if errors.Is(err, client.ErrNotFound) {
				t.Fatalf("node 2 after restart: k not found")
			}
			return false
		}
		if got != want {
			t.Fatalf("first successful read of k through node 2 after restart = %q, want %q (an acknowledged write is not visible)", got, want)
		}
		return true
	})
	if lastErr != nil {
		t.Logf("before that, node 2 answered: %v", lastErr)
	}
}

func readAll(ctx context.Context, cl *client.Client, path string) (string, error) {
	r, err := cl.Get(ctx, path, nil)
	if err != nil {
		return "", err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
}

func TestProcKillLeader(t *testing.T) {
	c := testcluster.StartProc(t, 3)
	ctx := procCtx(t, 40*time.Second)
	put(t, c.Client(), "a", "A")
	old := c.LeaderIndex()
	oldID := c.ID(old)
	c.Kill(old)
	next := c.LeaderIndex() // only running nodes count
	if next == old || c.ID(next) == oldID {
		t.Fatalf("the killed node %d is still leader", old)
	}
	survivors := c.Running()
	if len(survivors) != 2 || slices.Contains(survivors, old) {
		t.Fatalf("running after kill: %v", survivors)
	}
	if _, err := putRetry(ctx, c.Client(survivors...), "b", "B"); err != nil {
		t.Fatal(err)
	}
	for _, i := range survivors {
		mustGet(t, c.Client(i), "a", "A")
		mustGet(t, c.Client(i), "b", "B")
	}
	c.Restart(old) // only --data
	c.WaitReady(old)
	mustGet(t, c.Client(old), "b", "B")
	mustGet(t, c.Client(old), "a", "A")
}

func TestProcSIGSTOPNode(t *testing.T) {
	c := testcluster.StartProc(t, 3)
	ctx := procCtx(t, 40*time.Second)
	if _, err := c.Client(0).SetConfig(ctx, "resume", "immediate"); err != nil {
		t.Fatal(err)
	}
	put(t, c.Client(0), "f", "1")
	id2 := c.ID(2)
	testcluster.WaitFor(t, 10*time.Second, "node 2 to hold a valid copy of f", func() bool {
		raw, err := c.Client(0).FileStatus(ctx, "f")
		if err != nil {
			return false
		}
		var st struct {
			Version uint64   `json:"version"`
			Valid   []string `json:"valid"`
		}
		return json.Unmarshal(raw, &st) == nil && slices.Contains(st.Valid, id2)
	})
	if l := c.LeaderIndex(); l == 2 {
		t.Logf("node 2 is the raft leader: freezing it also forces an election")
	}

	c.Stop(2)
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := c.Client(0).Put(wctx, "f", strings.NewReader("2"), nil)
	cancel()
	if err != nil {
		c.Cont(2)
		t.Fatalf("write while node 2 is frozen: %v (after %v)", err, time.Since(start))
	}
	t.Logf("write with node 2 frozen took %v", time.Since(start).Round(time.Millisecond))

	c.Cont(2)
	// From the moment it runs again, node 2 must not serve the old
	// content: 200 only with "2", else a redirect or 503.
	want, old := sha("2"), sha("1")
	counts := map[int]int{}
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) {
		status, sum, body, err := directGet(ctx, c.HTTPAddr(2), "f")
		if err != nil {
			t.Fatalf("GET f on node 2 after SIGCONT: %v", err)
		}
		counts[status]++
		switch status {
		case http.StatusOK:
			if sum == old || body == "1" {
				t.Fatalf("node 2 served the version it missed while frozen (sha %s, body %q) after %v", sum, body, time.Since(end.Add(-2*time.Second)))
			}
			if sum != want || body != "2" {
				t.Fatalf("node 2 served sha %s body %q, want the sha of %q", sum, body, "2")
			}
		case http.StatusTemporaryRedirect, http.StatusServiceUnavailable:
		default:
			t.Fatalf("GET f on node 2 after SIGCONT: status %d (body %q)", status, body)
		}
	}
	t.Logf("answers of node 2 in the 2 s after SIGCONT: %v", counts)
	// Finally it serves "2" itself.
	testcluster.WaitFor(t, 10*time.Second, "node 2 to serve f=2 itself", func() bool {
		status, sum, body, err := directGet(ctx, c.HTTPAddr(2), "f")
		return err == nil && status == http.StatusOK && sum == want && body == "2"
	})
}

func TestProcSIGTERMGraceful(t *testing.T) {
	c := testcluster.StartProc(t, 3)
	ctx := procCtx(t, 40*time.Second)
	put(t, c.Client(0), "g", "before")

	start := time.Now()
	err := c.Term(2)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("node 2 after SIGTERM: %v, want exit status 0", err)
	}
	if took > 10*time.Second {
		t.Fatalf("node 2 took %v to exit after SIGTERM, want at most 10s", took)
	}
	t.Logf("node 2 exited 0 %v after SIGTERM", took.Round(time.Millisecond))

	// The others carry on without it.
	if _, err := putRetry(ctx, c.Client(0, 1), "g", "during"); err != nil {
		t.Fatal(err)
	}
	c.Restart(2) // only --data
	c.WaitReady(2)
	mustGet(t, c.Client(2), "g", "during")
	put(t, c.Client(2), "h", "after")
	mustGet(t, c.Client(0), "h", "after")
}
