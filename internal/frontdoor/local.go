package frontdoor

import (
	"net"
	"sync"
)

// LocalListener hands connections the front door accepted to this node's
// own HTTP server (http.Server.Serve on it, beside the node's port).
type LocalListener struct {
	addr net.Addr
	ch   chan net.Conn

	mu        sync.RWMutex
	closed    bool
	done      chan struct{}
	closeOnce sync.Once
}

// NewLocalListener returns a listener that reports addr as its address.
func NewLocalListener(addr net.Addr) *LocalListener {
	return &LocalListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// Deliver gives c to the server; false once the listener is closed.
func (l *LocalListener) Deliver(c net.Conn) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return false
	}
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

// Accept implements net.Listener.
func (l *LocalListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *LocalListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done) // wakes Deliver before taking the lock it holds
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
	})
	return nil
}

// Addr implements net.Listener.
func (l *LocalListener) Addr() net.Addr { return l.addr }
