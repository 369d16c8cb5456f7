//go:build linux

package systest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestForwardedWriteHolderKilledMidBody: a large write forwarded by a
// node without the right to the holder, which is killed (SIGKILL) while
// the body streams through. The client gets a retryable 503 that says how
// to retry, and the file is never half-written: the old version is read
// everywhere, before and after the holder returns; a retry succeeds.
func TestForwardedWriteHolderKilledMidBody(t *testing.T) {
	c := testcluster.StartProc(t, 3)
	ctx := procCtx(t, 60*time.Second)
	if _, err := c.Client(0).SetConfig(ctx, "resume.idle", "1h"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.New([]string{c.HTTPAddr(0)}, client.WithToken(c.Token())).Put(ctx, "big", strings.NewReader("v1"), nil); err != nil {
		t.Fatal(err)
	}
	holder, valid := fileHolders(ctx, t, c, 0, "big")
	out := -1
	for i := range 3 {
		if id := c.ID(i); id != holder && !strings.Contains(strings.Join(valid, ","), id) {
			out = i
		}
	}
	if holder != c.ID(0) || out < 0 {
		t.Fatalf("holder %s valid %v: want node 0 holding and a node with no copy", holder, valid)
	}
	const size = 8 << 20
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+c.HTTPAddr(out)+"/files/big", pr)
	req.ContentLength = size
	req.Header.Set("X-Mure-Forward", "1")
	req.Header.Set("Idempotency-Key", "kill-mid-body")
	type answer struct {
		status int
		body   string
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- answer{status: resp.StatusCode, body: string(b)}
	}()
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for range 16 { // 1 MiB through the forwarder towards the holder
		if _, err := pw.Write(chunk); err != nil {
			t.Fatalf("body refused before the kill: %v", err)
		}
	}
	c.Kill(0)
	go func() { // the rest of the body, for as long as anyone reads it
		for sent := 16 * len(chunk); sent < size; sent += len(chunk) {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		pw.Close()
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		t.Fatal("no answer after the holder was killed")
	}
	pr.CloseWithError(io.ErrClosedPipe)
	if a.err != nil {
		t.Fatalf("the forwarder gave no answer: %v", a.err)
	}
	var e struct{ Error, Code string }
	_ = json.Unmarshal([]byte(a.body), &e)
	if a.status != http.StatusServiceUnavailable || e.Code != "unavailable" || !strings.Contains(e.Error, "Idempotency-Key kill-mid-body") {
		t.Fatalf("answer %d %s, want 503 unavailable saying to retry with the key", a.status, a.body)
	}
	t.Logf("the forwarder answered %d: %s", a.status, e.Error)
	read := func(i int) string {
		r, err := client.New([]string{c.HTTPAddr(i)}, client.WithToken(c.Token())).Get(ctx, "big", nil)
		if err != nil {
			t.Fatalf("read on node %d: %v", i, err)
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		return string(b)
	}
	if got := read(out); got != "v1" {
		t.Fatalf("after the interrupted write: %d bytes, want the old version", len(got))
	}
	c.Restart(0)
	c.WaitReady(0)
	for _, i := range []int{0, 1, 2} {
		if got := read(i); got != "v1" {
			t.Fatalf("node %d after the holder returned: %d bytes, want the old version", i, len(got))
		}
	}
	// The retry, with the same key, is applied once.
	fc := client.New([]string{c.HTTPAddr(out)}, client.WithToken(c.Token()), client.WithForwarding())
	if _, err := fc.Put(ctx, "big", strings.NewReader("v2"), &client.PutOptions{IdempotencyKey: "kill-mid-body"}); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if got := read(out); got != "v2" {
		t.Fatalf("after the retry: %q", got)
	}
}
