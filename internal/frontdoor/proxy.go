package frontdoor

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/dispatch"
)

// maxDialTries is how many nodes a proxied connection tries before the
// client is told no node answers.
const maxDialTries = 3

// serveProxy accepts connections until ln is closed and relays each to a
// node. The relays outlive the listener: a front door that loses the role
// stops accepting, and what it relays finishes.
func (d *Door) serveProxy(ln *limitListener) {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: slow down, go on.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			d.log.Warn("front door accept", "err", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		d.stats.accepted.Add(1)
		d.wg.Go(func() { d.relay(c) })
	}
}

// relay hands one client connection to a node: it waits for the client's
// first bytes (HTTP clients speak first), dials the chosen node's client
// port, writes the signed preamble and those bytes in one segment, and
// then copies bytes both ways with splice(2) until the node closes (HTTP:
// the server ends connections) or the client is gone.
func (d *Door) relay(c net.Conn) {
	local := false
	d.mu.Lock()
	d.relays[c] = struct{}{}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.relays, c)
		d.mu.Unlock()
		if !local {
			_ = c.Close()
		}
	}()
	src := c
	if lc, ok := c.(*limitedConn); ok && lc.TCPConn() != nil {
		src = lc.TCPConn()
	}
	first := make([]byte, firstRead)
	_ = src.SetReadDeadline(time.Now().Add(d.cfg.HeaderTimeout))
	n, err := src.Read(first)
	_ = src.SetReadDeadline(time.Time{})
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			d.stats.reject("header_timeout")
			writeRaw(c, 408, "Request Timeout", "timeout", "no request arrived within "+d.cfg.HeaderTimeout.String()+" of connecting")
		}
		return
	}
	client := clientAddr(c)
	node, ok := d.choose(dispatch.Conn{Client: client})
	if !ok {
		writeRaw(c, 503, "Service Unavailable", "unavailable", "the front door knows no live node to send this connection to; retry shortly")
		return
	}
	if node.ID == d.cl.NodeID() && d.cfg.Local != nil {
		if local = d.serveLocal(c, first[:n]); local {
			return
		}
	}
	up, id, err := d.dialNode(client, node, first[:n])
	if err != nil {
		d.stats.dialFailed.Add(1)
		writeRaw(c, 503, "Service Unavailable", "unavailable", err.Error())
		return
	}
	defer d.sched.Done(id)
	defer up.Close()
	d.stats.proxied.Add(1)
	toNode := make(chan error, 1)
	go func() {
		_, err := io.Copy(up, src)
		if err == nil {
			// The client finished sending: tell the node.
			_ = up.CloseWrite()
		} else {
			// The client's side broke, or the door closed it (stopping):
			// close the node's side too, or the copy back would wait for
			// the node to close a kept-alive connection (its idle
			// timeout, minutes).
			_ = up.Close()
		}
		toNode <- err
	}()
	_, errBack := io.Copy(src, up)
	// The node closed: the exchange is over whatever the client does;
	// closing the client's side also ends the other copy.
	_ = c.Close()
	errTo := <-toNode
	if broken(errBack) || (broken(errTo) && errBack != nil) {
		d.stats.broken.Add(1)
	}
}

// firstRead is the most of a client's first bytes sent with the preamble.
const firstRead = 4096

// broken reports whether a copy ended by an error other than a close.
func broken(err error) bool {
	return err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF)
}

// dialNode connects to the chosen node and sends the preamble and the
// client's first bytes; if the node does not answer it asks the policy
// again, up to maxDialTries nodes in all.
func (d *Door) dialNode(client netip.AddrPort, n dispatch.NodeLoad, first []byte) (*net.TCPConn, string, error) {
	dialer := net.Dialer{Timeout: d.cfg.DialTimeout, KeepAlive: -1}
	var last error
	for try := range maxDialTries {
		if try > 0 {
			var ok bool
			if n, ok = d.choose(dispatch.Conn{Client: client}); !ok {
				break
			}
		}
		raw, err := dialer.Dial("tcp", n.Addr)
		if err != nil {
			d.sched.Done(n.ID)
			last = err
			d.log.Warn("front door: node does not answer", "node", n.ID, "addr", n.Addr, "err", err)
			continue
		}
		up := raw.(*net.TCPConn)
		msg := append(Preamble(d.cfg.Key, d.cl.NodeID(), client, time.Now()), first...)
		if _, err := up.Write(msg); err != nil {
			up.Close()
			d.sched.Done(n.ID)
			last = err
			continue
		}
		return up, n.ID, nil
	}
	if last == nil {
		return nil, "", errors.New("the front door knows no live node to send this connection to; retry shortly")
	}
	return nil, "", errors.New("no node answered the front door (" + last.Error() + "); retry shortly")
}

// serveLocal gives a connection the policy sent to this node to the
// node's own HTTP server: no relay, no second connection (a balancer in
// front of other machines cannot do that). It reports whether it did.
func (d *Door) serveLocal(c net.Conn, first []byte) bool {
	self := d.cl.NodeID()
	lc := &localConn{Conn: c, pending: first, done: func() { d.sched.Done(self) }}
	if !d.cfg.Local(lc) {
		return false
	}
	d.stats.local.Add(1)
	return true
}

// localConn is a client connection served by this node's own HTTP server:
// its first bytes were already read by the front door.
type localConn struct {
	net.Conn
	pending []byte
	once    sync.Once
	done    func()
}

func (c *localConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

func (c *localConn) Close() error {
	c.once.Do(c.done)
	return c.Conn.Close()
}

// ReadFrom keeps sendfile for files the node sends.
func (c *localConn) ReadFrom(r io.Reader) (int64, error) {
	if lc, ok := c.Conn.(*limitedConn); ok && lc.TCPConn() != nil {
		return lc.TCPConn().ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}
