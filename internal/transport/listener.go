package transport

import (
	"net"
	"sync"
	"time"
)

// subListener is the net.Listener for one protocol byte. The mux hands it
// authenticated *tls.Conn values whose protocol byte has been consumed.
type subListener struct {
	m         *Mux
	proto     byte
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

var _ net.Listener = (*subListener)(nil)

func newSubListener(m *Mux, proto byte) *subListener {
	return &subListener{
		m:     m,
		proto: proto,
		conns: make(chan net.Conn),
		done:  make(chan struct{}),
	}
}

// Accept waits for the next connection of this protocol.
func (s *subListener) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		select {
		case <-s.done:
			_ = c.Close()
			return nil, s.closedErr()
		default:
			return c, nil
		}
	case <-s.done:
		return nil, s.closedErr()
	}
}

// Close stops this sub-listener for good; later connections for its
// protocol are closed by the mux. It does not close the mux.
func (s *subListener) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	return nil
}

// Addr returns the mux's advertise address as a *net.TCPAddr.
func (s *subListener) Addr() net.Addr { return s.m.advertiseTCPAddr() }

func (s *subListener) closedErr() error {
	return &net.OpError{Op: "accept", Net: "tcp", Addr: s.Addr(), Err: net.ErrClosed}
}

// deliver hands c to an Accept call; it reports false if c was not taken
// (listener or mux closed, or nobody accepted within deliverTimeout).
func (s *subListener) deliver(c net.Conn) bool {
	t := time.NewTimer(deliverTimeout)
	defer t.Stop()
	select {
	case s.conns <- c:
		s.m.routed.Add(1)
		return true
	case <-s.done:
	case <-s.m.closing:
	case <-t.C:
		s.m.log.Warn("transport: connection not accepted in time, dropping",
			"proto", string(s.proto), "remote", c.RemoteAddr().String())
	}
	return false
}
