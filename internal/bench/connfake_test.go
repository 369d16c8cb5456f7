package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// connServer is an httptest server that counts the connections it
// accepts and the page requests each one carried, so that a test can check
// that every request came on a new connection.
type connServer struct {
	srv      *httptest.Server
	accepted atomic.Int64

	mu    sync.Mutex
	pages map[int64]int // connection -> page requests on it
}

type connIDKey struct{}

func newConnServer(t *testing.T, h http.Handler) *connServer {
	s := &connServer{pages: map[int64]int{}}
	var ids atomic.Int64
	s.srv = httptest.NewUnstartedServer(h)
	s.srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.accepted.Add(1)
		}
	}
	s.srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connIDKey{}, ids.Add(1))
	}
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

// page counts a page request on its connection.
func (s *connServer) page(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[r.Context().Value(connIDKey{}).(int64)]++
}

// pageRequests returns the page requests and the connections that carried
// them, and the most requests one connection carried.
func (s *connServer) pageRequests() (requests, conns, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.pages {
		requests += n
		conns++
		most = max(most, n)
	}
	return requests, conns, most
}

func (s *connServer) host() string { return strings.TrimPrefix(s.srv.URL, "http://") }

// pageNode is a node behind the front door: /status reports a CPU counter
// that grows by step at every poll (and a quota), /page serves the page
// (body, or what fail says).
type pageNode struct {
	*connServer
	step, quota float64
	polls       atomic.Int64
	fail        string // "", "500", "short", "empty", "hang"
}

const pageBody = "<html>a dynamic page</html>"

func newPageNode(t *testing.T, step, quota float64, fail string) *pageNode {
	n := &pageNode{step: step, quota: quota, fail: fail}
	n.connServer = newConnServer(t, http.HandlerFunc(n.serve))
	return n
}

func (n *pageNode) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/status":
		k := n.polls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"node":{"id":"n"},"host":{"source":"cgroup v2","cpu_seconds":%g,"cpu_quota_cores":%g,"memory_bytes":1}}`,
			float64(k)*n.step, n.quota)
	case "/page":
		n.page(r)
		switch n.fail {
		case "500":
			http.Error(w, "cgi failed", http.StatusInternalServerError)
		case "short": // declares more than it sends: the server cuts the connection
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, pageBody)
		case "empty":
		case "hang": // never answers; returns when the client gives up
			<-r.Context().Done()
		default:
			fmt.Fprint(w, pageBody)
		}
	default:
		http.NotFound(w, r)
	}
}

// frontDoor redirects each new connection to its nodes in turn (307, as
// the front door does), or serves the page itself without nodes (proxy
// mode seen from the client). loop makes it redirect to itself.
type frontDoor struct {
	*connServer
	nodes []*pageNode
	next  atomic.Int64
	loop  string // "": no loop; "self": to the same URL; "chain": to ever new URLs
}

func newFrontDoor(t *testing.T, loop string, nodes ...*pageNode) *frontDoor {
	f := &frontDoor{nodes: nodes, loop: loop}
	f.connServer = newConnServer(t, http.HandlerFunc(f.serve))
	return f
}

func (f *frontDoor) serve(w http.ResponseWriter, r *http.Request) {
	f.page(r)
	switch {
	case f.loop == "self":
		http.Redirect(w, r, r.URL.String(), http.StatusTemporaryRedirect)
	case f.loop == "chain":
		http.Redirect(w, r, r.URL.Path+"x", http.StatusTemporaryRedirect)
	case len(f.nodes) == 0:
		fmt.Fprint(w, pageBody)
	default:
		n := f.nodes[(f.next.Add(1)-1)%int64(len(f.nodes))]
		http.Redirect(w, r, n.srv.URL+"/page", http.StatusTemporaryRedirect)
	}
}
