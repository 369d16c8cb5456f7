package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func payload(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{1})
	r.Read(b)
	return b
}

func TestRedirectGet(t *testing.T) {
	st := &store{files: map[string][]byte{"a b/c": []byte("hello")}}
	b := newNode(t, st.handle)
	a := newNode(t, redirectTo(b))
	c := New([]string{a.addr()})
	r, err := c.Get(context.Background(), "a b/c", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, _ := io.ReadAll(r)
	if string(got) != "hello" || r.Info.ETag != "e1" || r.Info.Version != 1 || r.Info.Size != 5 {
		t.Fatalf("got %q %+v", got, r.Info)
	}
	if a.hits.Load() != 1 || b.hits.Load() != 1 {
		t.Fatalf("hits a=%d b=%d", a.hits.Load(), b.hits.Load())
	}
}

func TestRedirectPut(t *testing.T) {
	data := payload(1 << 20)
	tests := []struct {
		name string
		body func() io.Reader
		size int64
	}{
		{"seekable-known-size", func() io.Reader { return bytes.NewReader(data) }, 0},
		{"stream-known-size", func() io.Reader { return onlyReader{bytes.NewReader(data)} }, int64(len(data))},
		{"stream-chunked", func() io.Reader { return onlyReader{bytes.NewReader(data)} }, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &store{}
			b := newNode(t, st.handle)
			a := newNode(t, redirectTo(b))
			c := New([]string{a.addr()})
			fi, err := c.Put(context.Background(), "dir/f", tt.body(), &PutOptions{Size: tt.size})
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size != int64(len(data)) || fi.ETag != "e1" {
				t.Fatalf("info %+v", fi)
			}
			if got, _ := st.get("dir/f"); !bytes.Equal(got, data) {
				t.Fatalf("second node got %d bytes, want %d", len(got), len(data))
			}
			if rx := a.rx.Load(); rx > 4096 {
				t.Fatalf("first node received %d bytes: the body was sent to it", rx)
			}
		})
	}
}

// A redirect after the body was consumed: re-sent only if seekable.
func TestRedirectAfterBodyConsumed(t *testing.T) {
	data := payload(64 << 10)
	st := &store{}
	b := newNode(t, st.handle)
	a := newNode(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		redirectTo(b)(w, r)
	})
	c := New([]string{a.addr()})
	if _, err := c.Put(context.Background(), "f", bytes.NewReader(data), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.get("f"); !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes", len(got))
	}
	_, err := c.Put(context.Background(), "g", onlyReader{bytes.NewReader(data)}, &PutOptions{Size: int64(len(data))})
	if err == nil || !errors.Is(err, errCannotResend) {
		t.Fatalf("err = %v, want cannot re-send", err)
	}
	if _, ok := st.get("g"); ok {
		t.Fatal("g written")
	}
}

func TestRedirectLoop(t *testing.T) {
	var a *fakeNode
	a = newNode(t, func(w http.ResponseWriter, r *http.Request) { redirectTo(a)(w, r) })
	c := New([]string{a.addr()}, WithAttempts(1))
	_, err := c.Stat(context.Background(), "x")
	if err == nil || !strings.Contains(err.Error(), "too many redirects") {
		t.Fatalf("err = %v", err)
	}
	if h := a.hits.Load(); h != maxRedirects+1 {
		t.Fatalf("hits %d", h)
	}
}

func TestFailoverDialError(t *testing.T) {
	st := &store{files: map[string][]byte{"f": []byte("x")}}
	good := newNode(t, st.handle)
	tests := []struct {
		name string
		run  func(c *Client) error
	}{
		{"get", func(c *Client) error { _, err := c.Stat(context.Background(), "f"); return err }},
		{"put-stream", func(c *Client) error {
			_, err := c.Put(context.Background(), "g", onlyReader{strings.NewReader("data")}, &PutOptions{Size: 4})
			return err
		}},
		{"delete", func(c *Client) error {
			err := c.Delete(context.Background(), "f", nil)
			if errors.Is(err, ErrOutcomeUnknown) {
				return err
			}
			return nil // the fake answers 405; only failover matters
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := good.hits.Load()
			c := New([]string{deadAddr(t), good.addr()})
			if err := tt.run(c); err != nil {
				t.Fatal(err)
			}
			if good.hits.Load() != before+1 {
				t.Fatal("second node not reached")
			}
		})
	}
	if got, _ := st.get("g"); string(got) != "data" {
		t.Fatalf("g = %q", got)
	}
}

func TestAmbiguousPut(t *testing.T) {
	tests := []struct {
		name        string
		body        func([]byte) io.Reader
		wantUnknown bool
	}{
		{"seekable-retried-same-key", func(d []byte) io.Reader { return bytes.NewReader(d) }, false},
		{"stream-outcome-unknown", func(d []byte) io.Reader { return onlyReader{bytes.NewReader(d)} }, true},
	}
	data := payload(100 << 10)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var keys []string
			a := newNode(t, hangUp(&keys, &mu))
			st := &store{}
			b := newNode(t, st.handle)
			c := New([]string{a.addr(), b.addr()})
			_, err := c.Put(context.Background(), "f", tt.body(data), &PutOptions{Size: int64(len(data))})
			if tt.wantUnknown {
				if !errors.Is(err, ErrOutcomeUnknown) {
					t.Fatalf("err = %v, want ErrOutcomeUnknown", err)
				}
				if b.hits.Load() != 0 {
					t.Fatal("retried a consumed stream")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := st.get("f"); !bytes.Equal(got, data) {
				t.Fatalf("second node got %d bytes", len(got))
			}
			mu.Lock()
			defer mu.Unlock()
			st.mu.Lock()
			defer st.mu.Unlock()
			if len(keys) != 1 || len(st.keys) != 1 || keys[0] == "" || keys[0] != st.keys[0] {
				t.Fatalf("idempotency keys %q vs %q", keys, st.keys)
			}
		})
	}
}

func TestAllAttemptsAmbiguous(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	a := newNode(t, hangUp(&keys, &mu))
	c := New([]string{a.addr()}, WithAttempts(3))
	_, err := c.Put(context.Background(), "f", strings.NewReader("abc"), &PutOptions{IdempotencyKey: "k1"})
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("err = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 3 || keys[0] != "k1" || keys[2] != "k1" {
		t.Fatalf("keys %q", keys)
	}
}

func TestAttemptsOne(t *testing.T) {
	st := &store{files: map[string][]byte{"f": []byte("x")}}
	good := newNode(t, st.handle)
	busy := newNode(t, func(w http.ResponseWriter, r *http.Request) { writeErr(w, 503, "unavailable", "busy") })
	tests := []struct {
		name  string
		first string
		want  error
	}{
		{"dial-error", deadAddr(t), nil},
		{"unavailable", busy.addr(), ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := good.hits.Load()
			c := New([]string{tt.first, good.addr()}, WithAttempts(1))
			_, err := c.Get(context.Background(), "f", nil)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("err = %v", err)
			}
			if good.hits.Load() != before {
				t.Fatal("retried")
			}
			// With the default attempts it fails over.
			c = New([]string{tt.first, good.addr()})
			r, err := c.Get(context.Background(), "f", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
		})
	}
}

func TestAPIErrors(t *testing.T) {
	tests := []struct {
		status     int
		code, body string
		want       error
	}{
		{404, "not_found", "", ErrNotFound},
		{412, "precondition_failed", "", ErrPreconditionFailed},
		{413, "too_large", "", ErrTooLarge},
		{503, "no_quorum", "", ErrUnavailable},
		{400, "bad_path", "", nil},
		{502, "", "<html>bad gateway</html>", nil},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			n := newNode(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.body != "" {
					w.WriteHeader(tt.status)
					io.WriteString(w, tt.body)
					return
				}
				writeErr(w, tt.status, tt.code, "msg")
			})
			c := New([]string{n.addr()}, WithAttempts(1))
			_, err := c.Put(context.Background(), "f", strings.NewReader("x"), nil)
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != tt.status || ae.Code != tt.code || ae.Node != n.addr() {
				t.Fatalf("err = %#v", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("%v is not %v", err, tt.want)
			}
			if tt.body != "" && !strings.Contains(err.Error(), "bad gateway") {
				t.Fatalf("no excerpt in %q", err)
			}
			for _, s := range []error{ErrNotFound, ErrPreconditionFailed, ErrTooLarge, ErrUnavailable} {
				if s != tt.want && errors.Is(err, s) {
					t.Fatalf("%v is %v", err, s)
				}
			}
		})
	}
}

func TestRetry503(t *testing.T) {
	st := &store{}
	good := newNode(t, st.handle)
	busy := newNode(t, func(w http.ResponseWriter, r *http.Request) { writeErr(w, 503, "unavailable", "busy") })
	c := New([]string{busy.addr(), good.addr()})
	if _, err := c.Put(context.Background(), "f", strings.NewReader("abc"), nil); err != nil {
		t.Fatal(err)
	}
	if busy.hits.Load() != 1 || good.hits.Load() != 1 {
		t.Fatalf("hits %d %d", busy.hits.Load(), good.hits.Load())
	}
	_, err := c.Get(context.Background(), "missing", nil)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}

func TestContextCanceled(t *testing.T) {
	n := newNode(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	c := New([]string{n.addr()})
	_, err := c.Get(ctx, "f", nil)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("get err = %v", err)
	}
	if n.hits.Load() != 1 {
		t.Fatalf("hits %d", n.hits.Load())
	}
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = c.Delete(ctx, "f", nil)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("delete err = %v", err)
	}
}

func TestStreamingGet(t *testing.T) {
	const size = 8 << 20
	gen := func() io.Reader { return io.LimitReader(rand.NewChaCha8([32]byte{7}), size) }
	want := sha256.New()
	io.Copy(want, gen())
	n := newNode(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Mure-Version", "3")
		io.Copy(w, gen()) // chunked, produced on the fly
	})
	c := New([]string{n.addr()})
	r, err := c.Get(context.Background(), "big", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := sha256.New()
	if m, err := io.Copy(h, r); err != nil || m != size {
		t.Fatalf("copied %d: %v", m, err)
	}
	if !bytes.Equal(h.Sum(nil), want.Sum(nil)) || r.Info.Version != 3 {
		t.Fatal("content or info mismatch")
	}
}

func TestGetRangeAndHeaders(t *testing.T) {
	mod := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	var gotRange, gotQuery, gotINM, gotAuth, gotPath string
	n := newNode(t, func(w http.ResponseWriter, r *http.Request) {
		gotRange, gotQuery, gotINM = r.Header.Get("Range"), r.URL.RawQuery, r.Header.Get("If-None-Match")
		gotAuth, gotPath = r.Header.Get("Authorization"), r.URL.EscapedPath()
		w.Header().Set("ETag", `"abc"`)
		w.Header().Set("X-Mure-Version", "9")
		w.Header().Set("X-Mure-Sha256", "ff")
		w.Header().Set("Last-Modified", mod.Format(http.TimeFormat))
		if gotINM == `"abc"` {
			w.WriteHeader(304)
			return
		}
		w.Header().Set("Content-Range", "bytes 2-4/10")
		w.WriteHeader(206)
		io.WriteString(w, "234")
	})
	c := New([]string{"http://" + n.addr() + "/"}, WithToken("tok"))
	r, err := c.Get(context.Background(), "a b/100%", &GetOptions{Offset: 2, Length: 3, Stale: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	want := FileInfo{Path: "a b/100%", Version: 9, ETag: "abc", Size: 10, SHA256: "ff", Modified: mod}
	if string(b) != "234" || r.Info != want {
		t.Fatalf("got %q %+v", b, r.Info)
	}
	if gotRange != "bytes=2-4" || gotQuery != "stale=1" || gotAuth != "Bearer tok" || gotPath != "/files/a%20b/100%25" {
		t.Fatalf("range %q query %q auth %q path %q", gotRange, gotQuery, gotAuth, gotPath)
	}
	if _, err := c.Get(context.Background(), "x", &GetOptions{IfNoneMatch: "abc"}); !errors.Is(err, ErrNotModified) {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.Get(context.Background(), "a//b", nil); err == nil {
		t.Fatal("bad path accepted")
	}
}

func TestListConfigStatus(t *testing.T) {
	var setBody, listQuery string
	n := newNode(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/list":
			listQuery = r.URL.RawQuery
			io.WriteString(w, `{"files":[{"path":"a/x","size":3,"etag":"\"e\"","version":2,"modified":"2024-01-02T03:04:05Z"}],"prefixes":["a/b/"],"next":"a/x"}`)
		case r.URL.Path == "/config" && r.Method == "GET":
			io.WriteString(w, `{"replicas":"3"}`)
		case r.URL.Path == "/config/replicas" && r.Method == "PUT":
			b, _ := io.ReadAll(r.Body)
			setBody = string(b)
			io.WriteString(w, `{"replicas":"`+setBody+`"}`)
		case r.URL.Path == "/status":
			io.WriteString(w, `{"leader":"n1"}`)
		case r.URL.Path == "/status/files/a/x":
			io.WriteString(w, `{"state":"ok"}`)
		case r.URL.Path == "/nodes/leave" && r.Method == "POST", r.URL.Path == "/nodes/n2" && r.Method == "DELETE":
			w.WriteHeader(204)
		default:
			writeErr(w, 404, "not_found", r.URL.Path)
		}
	})
	ctx := context.Background()
	c := New([]string{n.addr()})
	page, err := c.List(ctx, ListOptions{Prefix: "a/", Delimiter: "/", Limit: 5, Consistent: true, After: "a/"})
	if err != nil {
		t.Fatal(err)
	}
	if listQuery != "after=a%2F&consistent=1&delimiter=%2F&limit=5&prefix=a%2F" {
		t.Fatalf("query %q", listQuery)
	}
	f := page.Files
	if len(f) != 1 || f[0].Path != "a/x" || f[0].ETag != "e" || f[0].Version != 2 || f[0].Size != 3 ||
		!f[0].Modified.Equal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) || page.Prefixes[0] != "a/b/" || page.Next != "a/x" {
		t.Fatalf("page %+v", page)
	}
	cfg, err := c.Config(ctx)
	if err != nil || cfg["replicas"] != "3" {
		t.Fatalf("config %v %v", cfg, err)
	}
	cfg, err = c.SetConfig(ctx, "replicas", "5")
	if err != nil || cfg["replicas"] != "5" || setBody != "5" {
		t.Fatalf("set config %v %v %q", cfg, err, setBody)
	}
	if st, err := c.Status(ctx); err != nil || string(st) != `{"leader":"n1"}` {
		t.Fatalf("status %s %v", st, err)
	}
	if st, err := c.FileStatus(ctx, "a/x"); err != nil || string(st) != `{"state":"ok"}` {
		t.Fatalf("file status %s %v", st, err)
	}
	if err := c.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveNode(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveNode(ctx, "n3"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}
