package bench

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeNode implements the minimal file API of a node: PUT stores in a map,
// GET returns it. Paths starting with "fail503/" answer 503.
type fakeNode struct {
	srv        *httptest.Server
	puts, gets atomic.Int64

	mu    sync.Mutex
	files map[string][]byte
	seen  map[string]map[string]bool // X-Mure-Client -> paths touched
}

func newFakeNode(t *testing.T) *fakeNode {
	f := &fakeNode{files: map[string][]byte{}, seen: map[string]map[string]bool{}}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeNode) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *fakeNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/status" { // nothing replicates here: always quiet
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"members":[{}],"files":{"live":0,"suspended":0,"pending":0,"under_replicated":0,"backlog":0}}`)
		return
	}
	p, ok := strings.CutPrefix(r.URL.Path, "/files/")
	if !ok {
		writeErr(w, 404, "not_found", "no route")
		return
	}
	f.mu.Lock()
	c := r.Header.Get("X-Mure-Client")
	if f.seen[c] == nil {
		f.seen[c] = map[string]bool{}
	}
	f.seen[c][p] = true
	f.mu.Unlock()
	if strings.HasPrefix(p, "fail503/") {
		io.Copy(io.Discard, r.Body)
		writeErr(w, 503, "unavailable", "busy")
		return
	}
	switch r.Method {
	case http.MethodPut:
		f.puts.Add(1)
		b, err := io.ReadAll(r.Body)
		if err != nil {
			writeErr(w, 400, "truncated", err.Error())
			return
		}
		f.mu.Lock()
		f.files[p] = b
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		fmt.Fprintf(w, `{"path":%q,"version":1,"etag":"e","size":%d}`, p, len(b))
	case http.MethodGet, http.MethodHead:
		if r.Method == http.MethodGet {
			f.gets.Add(1)
		}
		f.mu.Lock()
		b, ok := f.files[p]
		f.mu.Unlock()
		if !ok {
			writeErr(w, 404, "not_found", p)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.Write(b)
	default:
		writeErr(w, 405, "method_not_allowed", r.Method)
	}
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":%q,"code":%q}`, msg, code)
}

// pathsOf returns the paths client c touched.
func (f *fakeNode) pathsOf(c string) map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for p := range f.seen[c] {
		out[p] = true
	}
	return out
}

// clientsSeen returns the X-Mure-Client names seen.
func (f *fakeNode) clientsSeen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for c := range f.seen {
		out = append(out, c)
	}
	return out
}

// deadAddr returns an address nobody listens on.
func deadAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}
