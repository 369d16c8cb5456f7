package filehttp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/files"
)

// startHandOverFront serves handler with net/http behind a front (options
// o) that never answers a read itself (every key is "held elsewhere"):
// everything it reads must reach net/http unchanged.
func startHandOverFront(t *testing.T, o FrontOptions, handler http.Handler) (f *Front, addr string, opened *int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f = (&Handler{nodeHeader: []string{"n1"}}).NewFront(ln, o)
	opened = new(int)
	f.open = func(context.Context, string) (*files.Reader, error) {
		*opened++
		return nil, &files.HeldElsewhereError{Path: "x", Node: "n2"}
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(f)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return f, ln.Addr().String(), opened
}

// dialFront connects to the front at addr, with a deadline timeout away
// for everything the test does on the connection.
func dialFront(t *testing.T, addr string, timeout time.Duration) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(timeout))
	return c
}

// echo answers "METHOD PATH BODY" and, for /redirect, a 307 without
// reading the body.
func echo(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/files/redirect" {
		w.Header().Set("Location", "http://elsewhere/")
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	b, _ := io.ReadAll(r.Body)
	io.WriteString(w, r.Method+" "+r.URL.RawPath+r.URL.Path+" "+string(b))
}

// TestFrontHandsOver: what the front does not answer reaches net/http
// with the bytes it read, on the same connection: pipelined requests in
// order, a chunked body, and a write redirected before its body (Expect:
// 100-continue is answered by net/http, so a refused body is never asked
// for).
func TestFrontHandsOver(t *testing.T) {
	_, addr, opened := startHandOverFront(t, FrontOptions{}, http.HandlerFunc(echo))
	for _, tc := range []struct {
		name, send string
		want       []string // in order in the answer
		not        string
	}{
		{"a read held elsewhere", "GET /files/a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
			[]string{"HTTP/1.1 200", "GET /files/a "}, ""},
		{"pipelined", "GET /files/a HTTP/1.1\r\nHost: h\r\n\r\nPUT /files/b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyzGET /status HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
			[]string{"GET /files/a ", "PUT /files/b xyz", "GET /status "}, ""},
		{"chunked", "PUT /files/c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
			[]string{"PUT /files/c abc"}, ""},
		{"redirect before body", "PUT /files/redirect HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\nConnection: close\r\n\r\n",
			[]string{"HTTP/1.1 307"}, "100 Continue"},
		{"bad path", "GET /files/a//b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
			[]string{"GET /files/a//b "}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := roundTrip(t, addr, tc.send)
			rest := got
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("answer %q lacks %q (in order)", got, w)
				}
				rest = rest[i+len(w):]
			}
			if tc.not != "" && strings.Contains(got, tc.not) {
				t.Fatalf("answer %q has %q", got, tc.not)
			}
		})
	}
	if *opened == 0 {
		t.Fatal("the front never judged a read")
	}
}

// roundTrip sends raw bytes and reads until the server closes.
func roundTrip(t *testing.T, addr, send string) string {
	t.Helper()
	c := dialFront(t, addr, 5*time.Second)
	defer c.Close()
	if _, err := io.WriteString(c, send); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read: %v (got %q)", err, b)
	}
	return string(b)
}

// TestFrontSlowHead: a head that arrives in pieces is put together before
// it is judged.
func TestFrontSlowHead(t *testing.T) {
	_, addr, _ := startHandOverFront(t, FrontOptions{}, http.HandlerFunc(echo))
	c := dialFront(t, addr, 5*time.Second)
	defer c.Close()
	for _, part := range []string{"GET /fi", "les/a HTTP/1.1\r\nHo", "st: h\r\n", "\r\n"} {
		io.WriteString(c, part)
		time.Sleep(20 * time.Millisecond) // lets each piece arrive alone
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "GET /files/a " {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
}

// TestFrontClose: closing the front stops Accept and closes the
// connections idle in it; net/http's Shutdown relies on both.
func TestFrontClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := (&Handler{nodeHeader: []string{"n1"}}).NewFront(ln, FrontOptions{})
	accepted := make(chan error, 1)
	go func() {
		_, err := f.Accept()
		accepted <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for f.OpenConnections() != 1 { // held by the front, idle, before any request
		if time.Now().After(deadline) {
			t.Fatalf("the front holds %d connections, want 1", f.OpenConnections())
		}
		time.Sleep(time.Millisecond)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-accepted; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("an idle connection stayed open after Close: %v", err)
	}
}

// TestFrontHeadTimeout: a client that starts a head and stalls is cut off
// after HeaderTimeout, not held for the idle timeout.
func TestFrontHeadTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := (&Handler{nodeHeader: []string{"n1"}}).NewFront(ln, FrontOptions{HeaderTimeout: 50 * time.Millisecond, IdleTimeout: time.Minute})
	defer f.Close()
	go f.Accept()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /files/a HTTP/1.1\r\nHost")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("a stalled head was not cut off: %v", err)
	}
}
