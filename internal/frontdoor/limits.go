package frontdoor

import (
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/socket"
)

// limitListener bounds the front door's open connections, in all and per
// client address, so that one client's flood cannot take the slots of the
// others. A connection over a limit is answered at once with a 503 and
// closed: it costs one accept and one small write, never a goroutine that
// waits.
type limitListener struct {
	net.Listener
	max, perClient int    // perClient 0: no limit per client
	who            string // in the 503's message: "the front door", "this node"
	rejected       func(reason string)
	answer         func(c net.Conn, msg string) // writes the refusal; nil: refuse

	mu     sync.Mutex
	open   int
	byAddr map[netip.Addr]int
}

func newLimitListener(ln net.Listener, max, perClient int, rejected func(string)) *limitListener {
	return &limitListener{Listener: ln, max: max, perClient: perClient, who: "the front door", rejected: rejected, byAddr: map[netip.Addr]int{}}
}

// LimitConns bounds the connections open on ln at once: beyond max, a new
// connection is answered at once with a 503 in JSON and closed (a node's
// client port: idle keep-alive connections cost memory and descriptors
// that raft and the store need too). rejected is told each refusal. A max
// of 0 or less bounds nothing: the listener only counts (Open).
func LimitConns(ln net.Listener, max int, rejected func(reason string)) net.Listener {
	return &limitListener{Listener: ln, max: max, who: "this node", rejected: rejected, byAddr: map[netip.Addr]int{}}
}

// LimitConnsAnswer is LimitConns with the refusal written by answer, for
// a port whose clients expect another error format (S3's XML); answer
// writes a complete 503 response, and the listener closes c after it
// (nil: LimitConns's 503 in JSON).
func LimitConnsAnswer(ln net.Listener, max int, rejected func(reason string), answer func(c net.Conn, msg string)) net.Listener {
	l := LimitConns(ln, max, rejected).(*limitListener)
	l.answer = answer
	return l
}

// Accept returns the next connection within the limits, answering the
// others itself.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := clientAddr(c).Addr()
		l.mu.Lock()
		switch {
		case l.max > 0 && l.open >= l.max:
			l.mu.Unlock()
			l.refuse(c, l.who+" has "+strconv.Itoa(l.max)+" connections open, its limit; retry shortly")
			l.rejected("max_conns")
			continue
		case l.perClient > 0 && l.byAddr[addr] >= l.perClient:
			l.mu.Unlock()
			l.refuse(c, "this client address has "+strconv.Itoa(l.perClient)+" connections open to the front door, its limit; close some or retry")
			l.rejected("max_conns_per_client")
			continue
		}
		l.open++
		l.byAddr[addr]++
		l.mu.Unlock()
		return &limitedConn{Conn: c, release: func() { l.release(addr) }}, nil
	}
}

func (l *limitListener) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byAddr[addr]--; l.byAddr[addr] <= 0 {
		delete(l.byAddr, addr)
	}
}

// Open returns the connections held.
func (l *limitListener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	c.Release()
	return c.Conn.Close()
}

// Release gives the connection's slot back without closing it (once;
// Close does it too), for a server handed the TCP connection underneath
// (TCPConn) that reports its end itself: fasthttp writes with writev only
// to a *net.TCPConn (service.BareConns).
func (c *limitedConn) Release() { c.once.Do(c.release) }

// ReadFrom keeps sendfile and splice for what a server writes.
func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(c.Conn, r)
}

// TCPConn returns the TCP connection underneath (nil if there is none),
// for the relay's copies (splice(2)) and for servers that write with
// calls net.Conn does not offer (writev, MSG_MORE; filehttp's front).
func (c *limitedConn) TCPConn() *net.TCPConn { return socket.TCP(c.Conn) }

// ReadTCP returns the socket beneath for reads too: the limit reads
// nothing ahead (socket.Reader).
func (c *limitedConn) ReadTCP() *net.TCPConn { return socket.ReadTCP(c.Conn) }

// CloseWrite half-closes, for the relay.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// clientAddr returns a connection's remote address as an AddrPort (the
// zero value when it is not TCP).
func clientAddr(c net.Conn) netip.AddrPort {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return unmapped(a.AddrPort())
	}
	return netip.AddrPort{}
}

// unmapped turns an IPv4-mapped IPv6 address back into IPv4, so that one
// client has one key whichever socket family saw it.
func unmapped(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// refuse answers c with the listener's refusal and closes it.
func (l *limitListener) refuse(c net.Conn, msg string) {
	if l.answer == nil {
		refuse(c, msg)
		return
	}
	l.answer(c, msg)
	_ = c.Close()
}

// refuse answers a connection with a 503 in JSON and closes it.
func refuse(c net.Conn, msg string) {
	writeRaw(c, 503, "Service Unavailable", "overloaded", msg)
	_ = c.Close()
}

// writeRaw writes a complete JSON error response on a connection that no
// HTTP server owns (limits, the relay).
func writeRaw(c net.Conn, status int, reason, code, msg string) {
	body := `{"error":` + strconv.Quote(msg) + `,"code":"` + code + `"}` + "\n"
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = io.WriteString(c, "HTTP/1.1 "+strconv.Itoa(status)+" "+reason+"\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body)
}
