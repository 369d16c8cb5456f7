// Package socket finds the TCP socket beneath a connection that mure's
// listeners wrap (the connection limit, the front door's hand-over), for
// the writes net.Conn does not offer: writev, sendfile, MSG_MORE, splice.
// It imports only the standard library, so that any package may use it.
package socket

import "net"

// Wrapper is a connection that wraps a TCP socket and exposes it. Only
// writes may use the socket: a wrapper may have read bytes ahead, which
// only its own Read gives back.
type Wrapper interface {
	TCPConn() *net.TCPConn
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
