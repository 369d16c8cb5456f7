// Package socket finds the TCP socket beneath a connection that mure's
// listeners wrap (the connection limit, the front door's hand-over), for
// the writes net.Conn does not offer: writev, sendfile, MSG_MORE, splice;
// and, once no wrapper holds bytes it read ahead, for reads too (ReadTCP).
// It imports only the standard library, so that any package may use it.
package socket

import "net"

// Wrapper is a connection that wraps a TCP socket and exposes it. Only
// writes may use the socket: a wrapper may have read bytes ahead, which
// only its own Read gives back.
type Wrapper interface {
	TCPConn() *net.TCPConn
}

// Reader is a Wrapper that says when reads may go to the socket beneath it
// too: ReadTCP returns the socket once the wrapper (and every wrapper under
// it) holds no bytes it read ahead, nil while one does.
type Reader interface {
	Wrapper
	ReadTCP() *net.TCPConn
}

// ReadTCP returns the TCP socket c is or wraps when c's reads may go to it
// directly: c is the socket, or wraps it by Readers that hold nothing read
// ahead. nil otherwise, and for a wrapper that does not say (Wrapper only).
func ReadTCP(c net.Conn) *net.TCPConn {
	switch c := c.(type) {
	case *net.TCPConn:
		return c
	case Reader:
		return c.ReadTCP()
	}
	return nil
}

// TCP returns the TCP socket c is or wraps (by Wrapper, however deep),
// nil if there is none (TLS, a pipe).
func TCP(c net.Conn) *net.TCPConn {
	switch c := c.(type) {
	case *net.TCPConn:
		return c
	case Wrapper:
		return c.TCPConn()
	}
	return nil
}
