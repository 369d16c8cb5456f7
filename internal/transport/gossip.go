package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// errGossipShutdown is returned by a gossip transport after Shutdown.
var errGossipShutdown = errors.New("transport: gossip transport is shut down")

// gossipTransport is a memberlist.NodeAwareTransport over the mux: packets
// use the mux's UDP socket, streams are 'G' connections.
type gossipTransport struct {
	m        *Mux
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	// deliverMu is held while a packet is handed to memberlist, so that
	// once Shutdown returns no packet can be delivered any more.
	deliverMu sync.Mutex
	stopped   bool
}

var _ memberlist.NodeAwareTransport = (*gossipTransport)(nil)

// GossipTransport returns the memberlist transport of this mux (it also
// implements memberlist.NodeAwareTransport). Shutting it down (memberlist
// does on Shutdown) stops delivering gossip but leaves the mux running; a
// later call then returns a fresh transport, so a new memberlist can be
// created on the same mux. Only one gossip transport is live at a time.
func (m *Mux) GossipTransport() memberlist.Transport {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.gossip; g != nil {
		select {
		case <-g.stop:
			_ = g.Shutdown() // wait until its shutdown has completed
		default:
			return g
		}
	}
	g := &gossipTransport{
		m:        m,
		packetCh: make(chan *memberlist.Packet),
		streamCh: make(chan net.Conn),
		stop:     make(chan struct{}),
	}
	m.gossip = g
	if m.closed {
		close(g.stop)
		g.stopped = true
		return g
	}
	m.wg.Add(1)
	g.wg.Add(1)
	go g.streamLoop(m.subs[ProtoGossip])
	return g
}

// FinalAdvertiseAddr mimics memberlist.NetTransport: an explicit ip is
// used with the given port; otherwise the mux's advertise IP and port.
func (g *gossipTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if ip != "" {
		addr := net.ParseIP(ip)
		if addr == nil {
			return nil, 0, fmt.Errorf("transport: failed to parse advertise address %q", ip)
		}
		if ip4 := addr.To4(); ip4 != nil {
			addr = ip4
		}
		return addr, port, nil
	}
	adv := g.m.advertiseTCPAddr()
	return adv.IP, adv.Port, nil
}

// WriteTo sends one packet to addr over the mux's UDP socket.
func (g *gossipTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return g.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress implements memberlist.NodeAwareTransport.
func (g *gossipTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if g.isStopped() {
		return time.Time{}, errGossipShutdown
	}
	if g.m.faults.isolated.Load() {
		return time.Now(), nil // lost on the cut link, as a network would
	}
	udpAddr, err := net.ResolveUDPAddr("udp", a.Addr)
	if err != nil {
		return time.Time{}, fmt.Errorf("transport: resolve gossip address %q: %w", a.Addr, err)
	}
	if d := time.Duration(g.m.faults.gossipDelay.Load()); d > 0 {
		b = bytes.Clone(b) // memberlist may reuse the buffer once this returns
		time.AfterFunc(d, func() {
			if !g.isStopped() {
				_, _ = g.m.udp.WriteToUDP(b, udpAddr) // lost if it fails, as on a network
			}
		})
		return time.Now(), nil
	}
	_, err = g.m.udp.WriteToUDP(b, udpAddr)
	ts := time.Now()
	if err != nil {
		return ts, fmt.Errorf("transport: send gossip packet to %s: %w", a.Addr, err)
	}
	return ts, nil
}

// PacketCh delivers incoming UDP packets.
func (g *gossipTransport) PacketCh() <-chan *memberlist.Packet { return g.packetCh }

// DialTimeout opens an authenticated 'G' stream to addr.
func (g *gossipTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return g.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (g *gossipTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if g.isStopped() {
		return nil, errGossipShutdown
	}
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return g.m.Dial(ctx, a.Addr, ProtoGossip)
}

// StreamCh delivers incoming 'G' streams.
func (g *gossipTransport) StreamCh() <-chan net.Conn { return g.streamCh }

// Shutdown stops delivering packets and streams and waits for the
// transport's goroutine. It does not close the mux.
func (g *gossipTransport) Shutdown() error {
	g.stopOnce.Do(func() {
		close(g.stop)
		g.deliverMu.Lock()
		g.stopped = true
		g.deliverMu.Unlock()
		g.wg.Wait()
	})
	return nil
}

func (g *gossipTransport) isStopped() bool {
	select {
	case <-g.stop:
		return true
	default:
		return false
	}
}

// deliver hands a packet to memberlist, dropping it on shutdown.
func (g *gossipTransport) deliver(p *memberlist.Packet) {
	g.deliverMu.Lock()
	defer g.deliverMu.Unlock()
	if g.stopped {
		return
	}
	select {
	case g.packetCh <- p:
	case <-g.stop:
	case <-g.m.closing:
	}
}

// streamLoop forwards 'G' connections from the sub-listener to StreamCh.
func (g *gossipTransport) streamLoop(sub *subListener) {
	defer g.m.wg.Done()
	defer g.wg.Done()
	for {
		var c net.Conn
		select {
		case c = <-sub.conns:
		case <-sub.done:
			return
		case <-g.stop:
			return
		case <-g.m.closing:
			return
		}
		select {
		case g.streamCh <- c:
		case <-g.stop:
			_ = c.Close()
			return
		case <-g.m.closing:
			_ = c.Close()
			return
		}
	}
}
