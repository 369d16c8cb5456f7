package service

import (
	"net"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/mure-dev/mure/internal/socket"
)

// BareConns hands a fasthttp server the TCP connections under the wrappers
// a node puts around its client connections (--max-conns' slot, released
// by the wrapper's Close). fasthttp writes a response's head and body in
// one writev only to a *net.TCPConn; to anything else, a response larger
// than its 4 KiB write buffer takes two writes. Through the wrapper, the
// caching proxy's fast lane spent 21-26 µs of CPU on a 4 KiB hit instead
// of 15-18 (docs/decisions/0066).
//
// The wrapper stays here while fasthttp serves the bare connection, and
// its slot is given back when the server reports the connection's end:
// set the server's ConnState to BareConns.ConnState, and leave its
// MaxConnsPerIP at 0 (fasthttp would report its own wrapper, unknown here).
// A connection that does not wrap a TCP connection (TLS), or whose wrappers
// hold bytes they read ahead of it (socket.ReadTCP), is served as is.
type BareConns struct {
	mu   sync.Mutex
	held map[net.Conn]bareWrapper // the bare connection -> its wrapper
}

// bareWrapper is a connection that exposes the TCP connection under it for
// reads too and can give back what it holds without closing it:
// frontdoor's limit, which only counts. Over a wrapper that reads ahead of
// its socket (the front door's hand-over), its ReadTCP is nil until the
// bytes read ahead are given back, and the connection is served as is.
type bareWrapper interface {
	socket.Reader
	Release()
}

// Listener returns ln whose Accept unwraps the connections it can.
func (b *BareConns) Listener(ln net.Listener) net.Listener {
	return &bareListener{Listener: ln, conns: b}
}

// ConnState is fasthttp's Server.ConnState: a connection closed, or
// hijacked (fasthttp closes it once the hijacker returns), releases its
// wrapper.
func (b *BareConns) ConnState(c net.Conn, st fasthttp.ConnState) {
	if st != fasthttp.StateClosed && st != fasthttp.StateHijacked {
		return
	}
	b.mu.Lock()
	w, ok := b.held[c]
	delete(b.held, c)
	b.mu.Unlock()
	if ok {
		w.Release()
	}
}

// Held returns the connections served bare whose end is not reported yet.
func (b *BareConns) Held() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.held)
}

type bareListener struct {
	net.Listener
	conns *BareConns
}

func (l *bareListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	w, ok := c.(bareWrapper)
	if !ok {
		return c, nil
	}
	tc := w.ReadTCP()
	if tc == nil {
		return c, nil
	}
	b := l.conns
	b.mu.Lock()
	if b.held == nil {
		b.held = map[net.Conn]bareWrapper{}
	}
	b.held[tc] = w
	b.mu.Unlock()
	return tc, nil
}
