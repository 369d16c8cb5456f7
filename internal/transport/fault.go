package transport

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrIsolated is returned by Dial while the mux is isolated.
var ErrIsolated = errors.New("transport: node isolated (fault injection)")

// faults is the seam through which tests cut a node off from its peers: a
// partition at the transport, with no root and no iptables. While
// isolated, dials fail, inbound connections are refused, gossip packets are
// dropped both ways, and every established peer connection is closed.
type faults struct {
	enabled  atomic.Bool
	isolated atomic.Bool
	// gossipDelay holds every gossip packet this node sends for that
	// long (nanoseconds; SetGossipDelay).
	gossipDelay atomic.Int64
	mu          sync.Mutex
	live        map[*trackedConn]struct{}
}

// EnableFaults turns the seam on. Call it before any peer traffic: only
// connections made afterwards can be cut. (Off by default, so production
// connections stay plain *tls.Conn with no bookkeeping.)
func (m *Mux) EnableFaults() { m.faults.enabled.Store(true) }

// SetIsolated cuts this node off from every peer (true) or heals it.
// It is a fault-injection seam for tests (mure serve --debug-faults).
func (m *Mux) SetIsolated(on bool) {
	// Stored before the sweep: a connection registered after the sweep
	// sees the flag in track and closes itself.
	m.faults.isolated.Store(on)
	if !on {
		return
	}
	m.faults.mu.Lock()
	conns := make([]*trackedConn, 0, len(m.faults.live))
	for c := range m.faults.live {
		conns = append(conns, c)
	}
	m.faults.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// SetGossipDelay holds every gossip packet this node sends for d before
// it leaves (0: none): a longer path, as gossip's probes measure it
// (their acks are late by d). It is a seam for tests of the read order's
// round-trip key (the testbed's kernel has no netem); stream connections
// (raft, files) are not delayed.
func (m *Mux) SetGossipDelay(d time.Duration) { m.faults.gossipDelay.Store(int64(d)) }

// track registers c so that isolation can close it. A connection whose
// dial or handshake began before the node was isolated and ended after the
// sweep of SetIsolated would otherwise escape it and carry peer traffic
// (raft, read-lease renewals) through the partition for as long as it is
// pooled: so isolation is checked again once c is registered, and such a
// connection is closed at once (its reader sees an error, as on a cut).
func (f *faults) track(c net.Conn) net.Conn {
	if !f.enabled.Load() {
		return c
	}
	tc := &trackedConn{Conn: c, f: f}
	f.mu.Lock()
	if f.live == nil {
		f.live = map[*trackedConn]struct{}{}
	}
	f.live[tc] = struct{}{}
	f.mu.Unlock()
	if f.isolated.Load() {
		_ = tc.Close()
	}
	return tc
}

// trackedConn forgets itself when closed.
type trackedConn struct {
	net.Conn
	f    *faults
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.f.mu.Lock()
		delete(c.f.live, c)
		c.f.mu.Unlock()
	})
	return c.Conn.Close()
}
