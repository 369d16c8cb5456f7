package client

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeNode is an httptest server counting requests and the bytes received
// on its connections.
type fakeNode struct {
	*httptest.Server
	hits atomic.Int64
	rx   atomic.Int64 // raw bytes received, headers included
}

func newNode(t *testing.T, h http.HandlerFunc) *fakeNode {
	t.Helper()
	n := &fakeNode{}
	n.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.hits.Add(1)
		h(w, r)
	}))
	n.Listener = &countingListener{Listener: n.Listener, n: &n.rx}
	n.Start()
	t.Cleanup(n.Close)
	return n
}

func (n *fakeNode) addr() string { return strings.TrimPrefix(n.URL, "http://") }

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// deadAddr returns an address where nothing listens.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// store is a minimal files API: PUT stores, GET/HEAD return.
type store struct {
	mu    sync.Mutex
	files map[string][]byte
	keys  []string // Idempotency-Key of each PUT
}

func (s *store) handle(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/files/")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string][]byte{}
	}
	switch r.Method {
	case http.MethodPut:
		data, err := io.ReadAll(r.Body)
		if err != nil {
			writeErr(w, 400, "truncated", err.Error())
			return
		}
		s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
		s.files[p] = data
		w.Header().Set("ETag", `"e1"`)
		w.WriteHeader(201)
		json.NewEncoder(w).Encode(map[string]any{"path": p, "version": 1, "etag": "e1", "size": len(data)})
	case http.MethodGet, http.MethodHead:
		data, ok := s.files[p]
		if !ok {
			writeErr(w, 404, "not_found", "no such file")
			return
		}
		w.Header().Set("ETag", `"e1"`)
		w.Header().Set("X-Mure-Version", "1")
		w.Write(data)
	default:
		writeErr(w, 405, "method_not_allowed", r.Method)
	}
}

func (s *store) get(p string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.files[p]
	return d, ok
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	if status == 503 {
		w.Header().Set("Retry-After", "0")
	}
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": code})
}

// redirectTo answers 307 to the same path on target, without reading the body.
func redirectTo(target *fakeNode) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.EscapedPath()+"?hop=1", http.StatusTemporaryRedirect)
	}
}

// hangUp reads the whole body then closes the connection without answer.
func hangUp(keys *[]string, mu *sync.Mutex) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		*keys = append(*keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	}
}

// onlyReader hides every method but Read (no io.Seeker).
type onlyReader struct{ io.Reader }
