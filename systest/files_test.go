package systest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func put(t *testing.T, c *client.Client, path, body string) *client.FileInfo {
	t.Helper()
	fi, err := c.Put(ctxT(t), path, strings.NewReader(body), nil)
	if err != nil {
		t.Fatalf("put %s: %v", path, err)
	}
	return fi
}

func get(t *testing.T, c *client.Client, path string) (string, error) {
	t.Helper()
	r, err := c.Get(ctxT(t), path, nil)
	if err != nil {
		return "", err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
}

func mustGet(t *testing.T, c *client.Client, path, want string) {
	t.Helper()
	got, err := get(t, c, path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	if got != want {
		t.Fatalf("get %s = %q, want %q", path, got, want)
	}
}

// rawGet does one GET without following redirects.
func rawGet(t *testing.T, addr, path string) *http.Response {
	t.Helper()
	hc := &http.Client{Transport: testcluster.Authorize(nil), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get("http://" + addr + "/files/" + path)
	if err != nil {
		t.Fatalf("GET %s on %s: %v", path, addr, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestSingleNodeReadWrite(t *testing.T) {
	c := testcluster.Start(t, 1)
	cl := c.Client()
	fi := put(t, cl, "a/b", "one")
	if fi.Version == 0 || fi.Size != 3 {
		t.Fatalf("put info = %+v", fi)
	}
	put(t, cl, "a/b/c", "two") // a key and a "directory" of it coexist
	mustGet(t, cl, "a/b", "one")
	mustGet(t, cl, "a/b/c", "two")

	// Compare-and-set.
	if _, err := cl.Put(ctxT(t), "a/b", strings.NewReader("x"), &client.PutOptions{IfMatch: "999999"}); !errors.Is(err, client.ErrPreconditionFailed) {
		t.Fatalf("put with wrong If-Match: err = %v, want precondition failed", err)
	}
	fi2, err := cl.Put(ctxT(t), "a/b", strings.NewReader("three"), &client.PutOptions{IfMatch: fi.ETag})
	if err != nil {
		t.Fatalf("put with right If-Match: %v", err)
	}
	if fi2.Version <= fi.Version {
		t.Fatalf("version did not grow: %d then %d", fi.Version, fi2.Version)
	}
	if _, err := cl.Put(ctxT(t), "a/b", strings.NewReader("x"), &client.PutOptions{IfNoneMatch: true}); !errors.Is(err, client.ErrPreconditionFailed) {
		t.Fatalf("create-only on existing file: err = %v", err)
	}
	mustGet(t, cl, "a/b", "three")

	// Range read.
	r, err := cl.Get(ctxT(t), "a/b", &client.GetOptions{Offset: 1, Length: 3})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "hre" {
		t.Fatalf("range read = %q, want %q", b, "hre")
	}

	// Listing with a delimiter.
	page, err := cl.List(ctxT(t), client.ListOptions{Prefix: "a/", Delimiter: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Files) != 1 || page.Files[0].Path != "a/b" || len(page.Prefixes) != 1 || page.Prefixes[0] != "a/b/" {
		t.Fatalf("list = %+v", page)
	}

	// Delete leaves nothing readable; a second delete is 404.
	if err := cl.Delete(ctxT(t), "a/b", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := get(t, cl, "a/b"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := cl.Delete(ctxT(t), "a/b", nil); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	mustGet(t, cl, "a/b/c", "two")
}

func TestThreeNodesReplicateRedirectResume(t *testing.T) {
	c := testcluster.Start(t, 3)
	ctx := ctxT(t)
	for _, i := range []int{0, 1, 2} {
		if _, err := c.Client(i).SetConfig(ctx, "resume", "reads"); err == nil {
			break
		}
	}
	if _, err := c.Client(0).SetConfig(ctx, "resume.reads", "2"); err != nil {
		t.Fatal(err)
	}
	fi := put(t, c.Client(1), "doc", "v1")

	// Suspended: the node that is neither the writer nor its standby has
	// no valid copy and redirects to the writer.
	holder := c.Nodes[1].ID()
	f := c.Nodes[1].Cluster().FSM().File("doc")
	other := -1
	for _, i := range []int{0, 2} {
		if !f.IsValidOn(c.Nodes[i].ID()) {
			other = i
		}
	}
	if f.Holder != holder || len(f.Valid) != 2 || other < 0 {
		t.Fatalf("after the write: holder %s valid %v, want holder %s and one standby", f.Holder, f.Valid, holder)
	}
	resp := rawGet(t, c.HTTPAddr(other), "doc")
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("X-Mure-Redirect") != holder {
		t.Fatalf("GET on a node without a valid copy: %d to %q, want 307 to the holder %s", resp.StatusCode, resp.Header.Get("X-Mure-Redirect"), holder)
	}
	// The client follows redirects.
	mustGet(t, c.Client(other), "doc", "v1")

	// Two distinct clients read at the holder: the paper's resumption.
	for _, who := range []string{"alice", "bob"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+c.HTTPAddr(1)+"/files/doc", nil)
		req.Header.Set("X-Mure-Client", who)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	testcluster.WaitFor(t, 10*time.Second, "every node to hold a valid copy", func() bool {
		for i := range c.Nodes {
			r := rawGet(t, c.HTTPAddr(i), "doc")
			if r.StatusCode != http.StatusOK || r.Header.Get("Etag") != `"`+fmt.Sprint(fi.Version)+`"` {
				return false
			}
		}
		return true
	})
}

func TestWriteRedirectsToHolder(t *testing.T) {
	c := testcluster.Start(t, 3)
	ctx := ctxT(t)
	if _, err := c.Client(0).SetConfig(ctx, "resume.idle", "1h"); err != nil {
		t.Fatal(err)
	}
	put(t, c.Client(0), "f", "from0")
	// While node 0 holds the write right, a write sent to node 2 is
	// redirected before its body is read, and lands on node 0.
	req, _ := http.NewRequest(http.MethodPut, "http://"+c.HTTPAddr(2)+"/files/f", strings.NewReader("from2"))
	req.Header.Set("Expect", "100-continue")
	hc := &http.Client{Transport: testcluster.Authorize(nil), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("X-Mure-Redirect") != c.Nodes[0].ID() {
		t.Fatalf("PUT to a non-holder: %d to %q, want 307 to %s", resp.StatusCode, resp.Header.Get("X-Mure-Redirect"), c.Nodes[0].ID())
	}
	put(t, c.Client(2), "f", "from2")
	for i := range c.Nodes {
		mustGet(t, c.Client(i), "f", "from2")
	}
}

func TestConcurrentWriters(t *testing.T) {
	c := testcluster.Start(t, 3)
	const writers, rounds = 6, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds*2)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := c.Client(w % 3)
			for r := 0; r < rounds; r++ {
				body := fmt.Sprintf("w%d-r%d", w, r)
				if _, err := cl.Put(context.Background(), "shared", strings.NewReader(body), nil); err != nil {
					errs <- fmt.Errorf("shared: %w", err)
				}
				if _, err := cl.Put(context.Background(), fmt.Sprintf("own/%d", w), strings.NewReader(body), nil); err != nil {
					errs <- fmt.Errorf("own: %w", err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Every node agrees on each file's final content.
	for w := 0; w < writers; w++ {
		for i := range c.Nodes {
			mustGet(t, c.Client(i), fmt.Sprintf("own/%d", w), fmt.Sprintf("w%d-r%d", w, rounds-1))
		}
	}
	var first string
	for i := range c.Nodes {
		got, err := get(t, c.Client(i), "shared")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got, "w") || (i > 0 && got != first) {
			t.Fatalf("node %d reads %q, node 0 read %q", i, got, first)
		}
		first = got
	}
}

func TestBadInput(t *testing.T) {
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) { cfg.MaxBody = 1024 }})
	addr := c.HTTPAddr(0)
	put(t, c.Client(), "keep", "precious")
	long := strings.Repeat("x", 1025)
	cases := []struct {
		name, method, path string
		body               io.Reader
		status             int
		code               string
	}{
		{"dotdot", "PUT", "/files/a/%2e%2e/b", strings.NewReader("x"), 400, "bad_path"},
		{"dot", "GET", "/files/a/./b", nil, 400, "bad_path"},
		{"nul", "PUT", "/files/a%00b", strings.NewReader("x"), 400, "bad_path"},
		{"control", "PUT", "/files/a%01b", strings.NewReader("x"), 400, "bad_path"},
		{"empty segment", "PUT", "/files/a//b", strings.NewReader("x"), 400, "bad_path"},
		{"trailing slash", "PUT", "/files/a/", strings.NewReader("x"), 400, "bad_path"},
		{"too long", "PUT", "/files/" + long, strings.NewReader("x"), 400, "bad_path"},
		{"oversize", "PUT", "/files/keep", bytes.NewReader(make([]byte, 2048)), 413, "too_large"},
		{"unknown route", "GET", "/nope", nil, 404, "no_such_route"},
		{"method", "POST", "/files/keep", strings.NewReader("x"), 405, "method_not_allowed"},
		{"bad if-match", "PUT", "/files/keep", strings.NewReader("x"), 400, "bad_request"},
		{"bad config", "PUT", "/config/replication", strings.NewReader("lots"), 400, "bad_request"},
		{"unknown setting", "PUT", "/config/colour", strings.NewReader("blue"), 400, "bad_request"},
		{"remove unknown node", "DELETE", "/nodes/ghost", nil, 409, "conflict"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, "http://"+addr+tc.path, tc.body)
			if tc.name == "bad if-match" {
				req.Header.Set("If-Match", "not-an-etag")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(b), `"code":"`+tc.code+`"`) {
				t.Fatalf("%s %s: %d %s %s, want %d with code %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.status, tc.code)
			}
		})
	}
	mustGet(t, c.Client(), "keep", "precious")
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
