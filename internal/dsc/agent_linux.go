package dsc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Agent is one node's part of the single-address cluster: the kernel
// setup, the member side (inject what the master sends) and, while the
// node holds the dispatcher role, the master side (tap client SYNs and
// place them).
type Agent struct {
	cfg   Config
	log   *slog.Logger
	host  hostSetup
	udp   *net.UDPConn
	table *SYNTable
	stats struct {
		tapped, retrans, forwarded, injected, refused, unplaced, errors, stale atomic.Uint64
		rebuilds, rebuilt, unreported                                          atomic.Uint64
	}
	// replies carries half-open reports to a running rebuild.
	replies chan halfOpenReport

	mu     sync.Mutex
	master *tap                    // the user path's SYN tap, while it is in use
	peers  map[string]*net.UDPAddr // node → its agent, resolved once (per-SYN path)
	wg     sync.WaitGroup

	kp     *kernelPath // nil: the user path only
	kick   chan struct{}
	stop   context.CancelFunc
	path   atomic.Value // string: how SYNs are placed now
	tag    atomic.Value // string: the tag the filter accepts (Stats.AcceptTag)
	leader atomic.Bool  // placing SYNs (the control loop's view)
	ctl    controlState // owned by the control loop
}

// peer returns node's agent address, asking the cluster only the first
// time: a SYN's path should not walk the membership.
func (a *Agent) peer(node string) (*net.UDPAddr, bool) {
	a.mu.Lock()
	ua, ok := a.peers[node]
	a.mu.Unlock()
	if ok {
		return ua, true
	}
	for _, n := range a.cfg.Nodes() {
		if n.ID != node {
			continue
		}
		ip, err := netip.ParseAddr(n.PeerHost)
		if err != nil {
			return nil, false
		}
		ua = net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, uint16(a.udp.LocalAddr().(*net.UDPAddr).Port)))
		a.mu.Lock()
		a.peers[node] = ua
		a.mu.Unlock()
		return ua, true
	}
	return nil, false
}

// forget drops a cached address after a failed send (the node may have
// come back elsewhere).
func (a *Agent) forget(node string) {
	a.mu.Lock()
	delete(a.peers, node)
	a.mu.Unlock()
}

// Start sets the host up and starts the member side.
func Start(ctx context.Context, cfg Config) (*Agent, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if !cfg.Addr.Addr().Is4() {
		return nil, fmt.Errorf("single-address: %s: IPv4 only for now", cfg.Addr)
	}
	if cfg.MAC == nil {
		a := cfg.Addr.Addr().As4()
		cfg.MAC = net.HardwareAddr{0x02, 0x00, a[0], a[1], a[2], a[3]}
	}
	switch cfg.SYNPath {
	case "":
		cfg.SYNPath = PathAuto
	case PathAuto, PathKernel, PathUser, PathISN:
	default:
		return nil, fmt.Errorf("single-address: SYN path %q: use %s, %s, %s or %s", cfg.SYNPath, PathAuto, PathKernel, PathUser, PathISN)
	}
	a := &Agent{cfg: cfg, log: cfg.Logger, table: NewSYNTable(synTTL, 65536, nil), peers: map[string]*net.UDPAddr{},
		replies: make(chan halfOpenReport, 64), kick: make(chan struct{}, 1),
		host: hostSetup{iface: cfg.Iface, addr: cfg.Addr, mac: cfg.MAC, port: cfg.Port}}
	a.path.Store("")
	a.tag.Store("")
	a.ctl.tag = noTag // what setup installed
	if err := a.host.setup(ctx); err != nil {
		return nil, err
	}
	laddr, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		a.host.teardown(ctx)
		return nil, fmt.Errorf("single-address: SYN port %q: %w", cfg.Listen, err)
	}
	if a.udp, err = net.ListenUDP("udp", laddr); err != nil {
		a.host.teardown(ctx)
		return nil, fmt.Errorf("single-address: SYN port %s: %w", cfg.Listen, err)
	}
	if err := a.loadKernel(); err != nil {
		a.udp.Close()
		a.host.teardown(ctx)
		return nil, err
	}
	a.wg.Go(a.memberLoop)
	cctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	a.stop = stop
	a.wg.Go(func() { a.controlLoop(cctx) })
	a.log.Info("single-address node ready", "addr", cfg.Addr, "port", cfg.Port, "iface", cfg.Iface, "mac", cfg.MAC,
		"syn_port", a.udp.LocalAddr(), "syn_path", cfg.SYNPath, "kernel_path", a.kp != nil)
	return a, nil
}

// loadKernel loads and attaches the kernel path unless the user path was
// asked for; in auto mode a kernel that refuses it leaves the user path.
func (a *Agent) loadKernel() error {
	if a.cfg.SYNPath == PathUser {
		return nil
	}
	kp, err := loadKernelPath(a.cfg.Iface, a.cfg.Addr.Addr(), a.cfg.Port, a.cfg.MAC)
	if err == nil {
		if err = kp.attach(); err != nil {
			kp.close()
		}
	}
	if err != nil {
		if a.cfg.SYNPath == PathAuto {
			a.log.Warn("the kernel path is unavailable here; SYNs go through user space", "err", err)
			return nil
		}
		return err
	}
	a.kp = kp
	return nil
}

// Close stops both sides and removes the host setup.
func (a *Agent) Close(ctx context.Context) {
	a.stop()
	a.udp.Close()
	a.wg.Wait()
	if a.kp != nil {
		a.kp.close()
	}
	a.host.teardown(ctx)
}

// Stats returns the counters.
func (a *Agent) Stats() Stats {
	s := Stats{Master: a.leader.Load(), Path: a.path.Load().(string), AcceptTag: a.tag.Load().(string), Tapped: a.stats.tapped.Load(), Retransmitted: a.stats.retrans.Load(),
		Forwarded: a.stats.forwarded.Load(), Injected: a.stats.injected.Load(), Refused: a.stats.refused.Load(),
		Unplaced: a.stats.unplaced.Load(), Errors: a.stats.errors.Load(), Stale: a.stats.stale.Load(),
		Rebuilds: a.stats.rebuilds.Load(), Rebuilt: a.stats.rebuilt.Load(), Unreported: a.stats.unreported.Load()}
	if a.kp != nil {
		k := a.kp.stats()
		s.Tapped += k.Placed + k.Retransmitted
		s.Retransmitted += k.Retransmitted
		s.Injected += k.Accepted
		s.Expired = k.Expired
	}
	return s
}

// masterLoop places every client SYN the tap sees.
func (a *Agent) masterLoop(t *tap) {
	buf := make([]byte, 2048)
	for {
		n, at, err := t.read(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				a.log.Error("SYN tap stopped", "err", err)
			}
			return
		}
		syn, err := ParseFrame(buf[:n])
		if err != nil {
			continue // the filter passed something odd: not ours to place
		}
		a.stats.tapped.Add(1)
		// A SYN that waited longer than a client's first retransmission
		// timeout (1 s) was buffered while this master was paused: the
		// client has sent it again since, to whoever is master now.
		if time.Since(at) > staleSYN {
			a.stats.stale.Add(1)
			continue
		}
		a.place(syn)
	}
}

// place sends one SYN to its node: the one the table remembers for this
// client address:port (a retransmission), else the policy's choice.
func (a *Agent) place(syn SYN) {
	// Fencing: a master that was paused (SIGSTOP) and resumes finds the
	// SYNs it buffered meanwhile; if a successor has taken over it places
	// none of them (the members would refuse them anyway; this covers its
	// own TUN too).
	if a.cfg.Recognised() != a.cfg.Self {
		a.stats.refused.Add(1)
		return
	}
	node, ok := a.table.Lookup(syn.Client)
	if ok && a.cfg.Down != nil && a.cfg.Down(node) {
		ok = false // that node died with the handshake: place the SYN afresh
	}
	if ok {
		a.stats.retrans.Add(1)
	} else if node, ok = a.cfg.Choose(syn.Client); !ok {
		a.stats.unplaced.Add(1)
		return
	}
	a.table.Remember(syn.Client, node)
	pkt := append([]byte(nil), syn.Packet...)
	if node == a.cfg.Self {
		a.inject(pkt)
		return
	}
	ua, ok := a.peer(node)
	if !ok {
		a.stats.unplaced.Add(1)
		return
	}
	if _, err := a.udp.WriteToUDP(encodeForward(a.cfg.Key, a.cfg.Self, time.Now(), pkt), ua); err != nil {
		a.forget(node)
		a.stats.errors.Add(1)
		a.log.Warn("cannot forward a SYN", "node", node, "err", err)
		return
	}
	a.stats.forwarded.Add(1)
}

// memberLoop injects the SYNs a recognised master forwards, answers
// half-open queries and hands their replies to a running rebuild.
func (a *Agent) memberLoop() {
	buf := make([]byte, 65536)
	for {
		n, from, err := a.udp.ReadFromUDP(buf)
		if err != nil {
			return // closed
		}
		kind, sender, payload, err := decodeMsg(a.cfg.Key, buf[:n], time.Now())
		if err == nil && kind == fwdMagic && sender != a.cfg.Recognised() {
			err = fmt.Errorf("forwarded SYN from %s, not the master this node recognises", sender)
		}
		if err != nil {
			a.stats.refused.Add(1)
			a.log.Debug("refused a datagram", "from", from, "err", err)
			continue
		}
		switch kind {
		case fwdMagic:
			a.inject(payload)
		case queryMagic:
			a.answer(from, payload)
		case replyMagic:
			nonce, clients, err := decodeHalfOpen(payload)
			if err != nil {
				continue
			}
			select {
			case a.replies <- halfOpenReport{node: sender, nonce: nonce, clients: clients}:
			default: // no rebuild is listening at this rate
			}
		}
	}
}

// inject repairs the checksums (a SYN tapped from a veth may carry a
// partial, offloaded one, which the kernel would find INVALID) and writes
// the packet into the TUN device.
func (a *Agent) inject(pkt []byte) {
	if err := FixChecksums(pkt); err == nil {
		err = a.host.inject(pkt)
		if err == nil {
			a.stats.injected.Add(1)
			return
		}
	}
	a.stats.errors.Add(1)
}
