package socket

import (
	"crypto/tls"
	"net"
	"testing"
)

// wrapped is a connection wrapping another, as the connection limit's do.
type wrapped struct{ net.Conn }

func (w wrapped) TCPConn() *net.TCPConn { return TCP(w.Conn) }

// opaque wraps a connection without saying so.
type opaque struct{ net.Conn }

func TestTCP(t *testing.T) {
	tc := dialTCP(t)
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	for _, tc2 := range []struct {
		name string
		c    net.Conn
		want *net.TCPConn
	}{
		{"the socket", tc, tc},
		{"wrapped", wrapped{tc}, tc},
		{"wrapped twice", wrapped{wrapped{tc}}, tc},
		{"wrapped without saying", opaque{tc}, nil},
		{"TLS over it", tls.Client(tc, &tls.Config{InsecureSkipVerify: true}), nil},
		{"a pipe", p1, nil},
		{"a pipe wrapped", wrapped{p1}, nil},
	} {
		t.Run(tc2.name, func(t *testing.T) {
			if got := TCP(tc2.c); got != tc2.want {
				t.Errorf("TCP = %v, want %v", got, tc2.want)
			}
		})
	}
}

// reading wraps a connection and says whether it holds bytes read ahead.
type reading struct {
	net.Conn
	ahead bool
}

func (r reading) TCPConn() *net.TCPConn { return TCP(r.Conn) }

func (r reading) ReadTCP() *net.TCPConn {
	if r.ahead {
		return nil
	}
	return ReadTCP(r.Conn)
}

func TestReadTCP(t *testing.T) {
	tc := dialTCP(t)
	for _, tc2 := range []struct {
		name string
		c    net.Conn
		want *net.TCPConn
	}{
		{"the socket", tc, tc},
		{"a wrapper with nothing read ahead", reading{Conn: tc}, tc},
		{"two of them", reading{Conn: reading{Conn: tc}}, tc},
		{"a wrapper with bytes read ahead", reading{Conn: tc, ahead: true}, nil},
		{"one under a wrapper without them", reading{Conn: reading{Conn: tc, ahead: true}}, nil},
		{"a wrapper that does not say", wrapped{tc}, nil},
		{"one under a wrapper that says", reading{Conn: wrapped{tc}}, nil},
		{"TLS over it", tls.Client(tc, &tls.Config{InsecureSkipVerify: true}), nil},
	} {
		t.Run(tc2.name, func(t *testing.T) {
			if got := ReadTCP(tc2.c); got != tc2.want {
				t.Errorf("ReadTCP = %v, want %v", got, tc2.want)
			}
		})
	}
}

// dialTCP returns a loopback TCP connection, closed with its listener when the
// test ends.
func dialTCP(t *testing.T) *net.TCPConn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}
