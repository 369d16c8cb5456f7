package frontdoor

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/socket"
)

// The hand-over preamble: in proxy mode the front door opens a plain TCP
// connection to the chosen node's client port and writes one line before
// the client's bytes:
//
//	MURE-HANDOVER/1 <dispatcher ID> <client ip:port> <unix ms> <hmac>\r\n
//
// The HMAC (SHA-256 keyed with the cluster key's hand-over key, first 16
// bytes in hex) covers the line up to it. The node accepts the connection
// only if the MAC is right, the time is within HandoverSkew of its clock
// and the dispatcher is the one it recognises; then it serves the client
// as if it had connected directly, with the client's address.
const handoverMagic = "MURE-HANDOVER/1 "

// HandoverSkew is how far a preamble's time may be from the node's clock.
const HandoverSkew = time.Minute

// PreambleTimeout bounds the wait for a connection's first 16 bytes.
const PreambleTimeout = 10 * time.Second

// maxPreamble bounds the preamble line.
const maxPreamble = 256

// Preamble returns the hand-over line for a client connection.
func Preamble(key []byte, dispatcher string, client netip.AddrPort, now time.Time) []byte {
	body := fmt.Sprintf("%s%s %s %d", handoverMagic, dispatcher, client, now.UnixMilli())
	return []byte(body + " " + mac(key, body) + "\r\n")
}

func mac(key []byte, body string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// Errors of a rejected hand-over.
var (
	errBadPreamble  = errors.New("malformed hand-over preamble")
	errBadMAC       = errors.New("hand-over not signed with this cluster's key")
	errStale        = errors.New("hand-over preamble too old or from the future (clocks apart?)")
	errNotRecognise = errors.New("hand-over from a node this node does not recognise as the dispatcher")
)

// Verifier checks preambles on a node's client port.
type Verifier struct {
	Key []byte
	// Dispatcher returns the dispatcher this node recognises; Leader, when
	// set, the raft leader it knows, also accepted: while the role moves
	// to a new leader, nodes may still name the old holder for a moment,
	// and both are legitimate (a node that is neither is refused).
	Dispatcher func() string
	Leader     func() string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// verify parses and checks one preamble line (without its CRLF) and
// returns the client's address and the dispatcher that sent it.
func (v *Verifier) verify(line string) (netip.AddrPort, string, error) {
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return netip.AddrPort{}, "", errBadPreamble
	}
	body, sum := line[:i], line[i+1:]
	if !hmac.Equal([]byte(sum), []byte(mac(v.Key, body))) {
		return netip.AddrPort{}, "", errBadMAC
	}
	f := strings.Fields(strings.TrimPrefix(body, handoverMagic))
	if len(f) != 3 {
		return netip.AddrPort{}, "", errBadPreamble
	}
	client, err := netip.ParseAddrPort(f[1])
	if err != nil {
		return netip.AddrPort{}, "", errBadPreamble
	}
	ms, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return netip.AddrPort{}, "", errBadPreamble
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	if d := now().Sub(time.UnixMilli(ms)); d > HandoverSkew || d < -HandoverSkew {
		return netip.AddrPort{}, "", errStale
	}
	if f[0] != v.Dispatcher() && (v.Leader == nil || f[0] != v.Leader()) {
		return netip.AddrPort{}, f[0], errNotRecognise
	}
	return client, f[0], nil
}

// AcceptHandovers wraps a node's client listener: a connection that starts
// with a hand-over preamble is verified and then served as the client's
// own; any other connection passes unchanged (one 16-byte peek, which
// every HTTP request line exceeds). A rejected hand-over is answered
// 421 Misdirected Request and closed. Rejected counts refusals.
func AcceptHandovers(ln net.Listener, v *Verifier, rejected func(reason string)) net.Listener {
	return &handoverListener{Listener: ln, v: v, rejected: rejected}
}

type handoverListener struct {
	net.Listener
	v        *Verifier
	rejected func(string)
}

func (l *handoverListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &handoverConn{Conn: c, l: l}, nil
}

// handoverConn reads the preamble, if any, on the first Read (in the
// server's connection goroutine, under its read deadline, never in
// Accept) or RemoteAddr (under PreambleTimeout). It keeps the underlying connection's ReadFrom, so that files
// are still sent with sendfile.
type handoverConn struct {
	net.Conn
	l      *handoverListener
	once   sync.Once
	br     *bufio.Reader // nil once drained: reads go straight to Conn
	direct bool          // br was drained: nothing read ahead is left
	remote net.Addr
	err    error
}

func (c *handoverConn) Read(p []byte) (int, error) {
	c.once.Do(c.check) // under the reader's deadline, left as it is
	if c.err != nil {
		return 0, c.err
	}
	if c.br != nil {
		if c.br.Buffered() == 0 {
			c.br, c.direct = nil, true
			return c.Conn.Read(p)
		}
		return c.br.Read(p)
	}
	return c.Conn.Read(p)
}

// checkBounded checks under a deadline of its own: http.Server asks for
// RemoteAddr before it sets its own deadlines, and a client that sends
// nothing must not hold this goroutine for ever. From Read, the deadline
// is the reader's (the front's idle one): clearing it would let a client
// that sent one request hold its connection, and its --max-conns slot,
// for ever.
func (c *handoverConn) checkBounded() {
	_ = c.Conn.SetReadDeadline(time.Now().Add(PreambleTimeout))
	defer c.Conn.SetReadDeadline(time.Time{})
	c.check()
}

func (c *handoverConn) check() {
	// One read takes the whole first segment (preamble and request); the
	// server then drains it from here before reading the socket again.
	c.br = bufio.NewReaderSize(c.Conn, 4096)
	head, err := c.br.Peek(len(handoverMagic))
	if !bytes.Equal(head, []byte(handoverMagic)) {
		if err != nil && len(head) == 0 {
			c.err = err
		}
		return // an ordinary client; Peek's short read is returned by later Reads
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil || len(line) > maxPreamble {
		c.reject(errBadPreamble)
		return
	}
	client, _, verr := c.l.v.verify(strings.TrimRight(string(line), "\r\n"))
	if verr != nil {
		c.reject(verr)
		return
	}
	c.remote = net.TCPAddrFromAddrPort(client)
}

func (c *handoverConn) reject(err error) {
	writeRaw(c.Conn, 421, "Misdirected Request", "misdirected",
		"this connection was handed over by a front door this node does not accept ("+err.Error()+"); reconnect to the cluster's address")
	c.err = err
	if c.l.rejected != nil {
		c.l.rejected(reasonOf(err))
	}
}

func reasonOf(err error) string {
	switch err {
	case errBadMAC:
		return "bad_mac"
	case errStale:
		return "stale"
	case errNotRecognise:
		return "not_dispatcher"
	}
	return "malformed"
}

// RemoteAddr is the client's address for a handed-over connection.
func (c *handoverConn) RemoteAddr() net.Addr {
	c.once.Do(c.checkBounded)
	if c.remote != nil {
		return c.remote
	}
	return c.Conn.RemoteAddr()
}

// TCPConn returns the TCP connection underneath, as limitedConn does.
// Only writes may use it: reads must go through the connection, which
// replays what the hand-over read first.
func (c *handoverConn) TCPConn() *net.TCPConn { return socket.TCP(c.Conn) }

// ReadTCP returns the socket beneath once the bytes the hand-over read
// first have all been given back by Read, nil before (socket.Reader). Call
// it from the goroutine that reads.
func (c *handoverConn) ReadTCP() *net.TCPConn {
	if !c.direct {
		return nil
	}
	return socket.ReadTCP(c.Conn)
}

// ReadFrom keeps sendfile and splice for what the server writes.
func (c *handoverConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(c.Conn, r)
}
