package frontdoor

import (
	"errors"
	"io"
	"net"
	"net/netip"
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

// relay hands one client connection to a node: it dials the chosen node's
// client port, writes the signed preamble and copies bytes both ways with
// splice(2) until the node closes (HTTP: the server ends connections) or
// the client is gone.
func (d *Door) relay(c net.Conn) {
	d.mu.Lock()
	d.relays[c] = struct{}{}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.relays, c)
		d.mu.Unlock()
		_ = c.Close()
	}()
	client := clientAddr(c)
	up, id, err := d.dialNode(client)
	if err != nil {
		d.stats.dialFailed.Add(1)
		writeRaw(c, 503, "Service Unavailable", "unavailable", err.Error())
		return
	}
	defer d.sched.Done(id)
	defer up.Close()
	d.stats.proxied.Add(1)
	src := net.Conn(c)
	if lc, ok := c.(*limitedConn); ok && lc.tcp() != nil {
		src = lc.tcp()
	}
	toNode := make(chan error, 1)
	go func() {
		_, err := io.Copy(up, src)
		// The client finished sending (or is gone): tell the node.
		_ = up.CloseWrite()
		toNode <- err
	}()
	_, errBack := io.Copy(src, up)
	// The node closed: the exchange is over whatever the client does;
	// closing the client's side also ends the other copy.
	_ = c.Close()
	errTo := <-toNode
	if broken(errBack) || broken(errTo) {
		d.stats.broken.Add(1)
	}
}

// broken reports whether a copy ended by an error other than a close.
func broken(err error) bool {
	return err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF)
}

// dialNode asks the policy for a node and connects to it, trying up to
// maxDialTries nodes.
func (d *Door) dialNode(client netip.AddrPort) (*net.TCPConn, string, error) {
	var last error
	for range maxDialTries {
		n, ok := d.sched.Choose(dispatch.Conn{Client: client})
		if !ok {
			return nil, "", errors.New("the front door knows no live node to send this connection to; retry shortly")
		}
		raw, err := net.DialTimeout("tcp", n.Addr, d.cfg.DialTimeout)
		if err != nil {
			d.sched.Done(n.ID)
			last = err
			d.log.Warn("front door: node does not answer", "node", n.ID, "addr", n.Addr, "err", err)
			continue
		}
		up := raw.(*net.TCPConn)
		if _, err := up.Write(Preamble(d.cfg.Key, d.cl.NodeID(), client, time.Now())); err != nil {
			up.Close()
			d.sched.Done(n.ID)
			last = err
			continue
		}
		return up, n.ID, nil
	}
	return nil, "", errors.New("no node answered the front door (" + last.Error() + "); retry shortly")
}
