package dsc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
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
	master *tap
	peers  map[string]*net.UDPAddr // node → its agent, resolved once (per-SYN path)
	wg     sync.WaitGroup
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
	addr, ok := a.cfg.AgentAddr(node)
	if !ok {
		return nil, false
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, false
	}
	a.mu.Lock()
	a.peers[node] = ua
	a.mu.Unlock()
	return ua, true
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
	a := &Agent{cfg: cfg, log: cfg.Logger, table: NewSYNTable(30*time.Second, 65536, nil), peers: map[string]*net.UDPAddr{},
		replies: make(chan halfOpenReport, 64),
		host:    hostSetup{iface: cfg.Iface, addr: cfg.Addr, mac: cfg.MAC}}
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
	a.wg.Go(a.memberLoop)
	a.log.Info("single-address node ready", "addr", cfg.Addr, "port", cfg.Port, "iface", cfg.Iface, "mac", cfg.MAC, "syn_port", a.udp.LocalAddr())
	return a, nil
}

// SetMaster starts or stops the master side (the dispatcher role moved).
func (a *Agent) SetMaster(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case on && a.master == nil:
		t, err := openTap(a.cfg.Iface, a.cfg.Addr.Addr(), a.cfg.Port)
		if err != nil {
			a.log.Error("cannot become the SYN master", "err", err)
			return
		}
		a.master = t
		a.wg.Go(func() {
			// SYNs wait in the tap while the table is rebuilt.
			a.rebuild(rebuildWait)
			a.masterLoop(t)
		})
		a.log.Info("SYN master on")
	case !on && a.master != nil:
		a.master.close()
		a.master = nil
		a.log.Info("SYN master off")
	}
}

// Close stops both sides and removes the host setup.
func (a *Agent) Close(ctx context.Context) {
	a.SetMaster(false)
	a.udp.Close()
	a.wg.Wait()
	a.host.teardown(ctx)
}

// Stats returns the counters.
func (a *Agent) Stats() Stats {
	a.mu.Lock()
	master := a.master != nil
	a.mu.Unlock()
	return Stats{Master: master, Tapped: a.stats.tapped.Load(), Retransmitted: a.stats.retrans.Load(),
		Forwarded: a.stats.forwarded.Load(), Injected: a.stats.injected.Load(), Refused: a.stats.refused.Load(),
		Unplaced: a.stats.unplaced.Load(), Errors: a.stats.errors.Load(), Stale: a.stats.stale.Load(),
		Rebuilds: a.stats.rebuilds.Load(), Rebuilt: a.stats.rebuilt.Load(), Unreported: a.stats.unreported.Load()}
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

// rebuildWait bounds how long a new master waits for the nodes' reports.
const rebuildWait = 300 * time.Millisecond

type halfOpenReport struct {
	node    string
	nonce   uint64
	clients []netip.AddrPort
}

// rebuild replaces the table with the nodes' half-open connections, asking
// every node it knows and waiting up to wait for their answers. A node that
// does not answer in time (paused, dead) is counted; its retransmitted SYNs
// are placed afresh.
func (a *Agent) rebuild(wait time.Duration) {
	nonce := rand.Uint64()
	entries := map[string][]netip.AddrPort{}
	if own, err := a.halfOpen(); err == nil {
		entries[a.cfg.Self] = own
	} else {
		a.log.Warn("cannot read this node's half-open connections", "err", err)
	}
	asked := map[string]bool{}
	q := encodeMsg(queryMagic, a.cfg.Key, a.cfg.Self, time.Now(), binary.BigEndian.AppendUint64(nil, nonce))
	for _, id := range a.cfg.Nodes() {
		if id == a.cfg.Self {
			continue
		}
		ua, ok := a.peer(id)
		if !ok {
			continue
		}
		if _, err := a.udp.WriteToUDP(q, ua); err == nil {
			asked[id] = true
		}
	}
	deadline := time.After(wait)
	for len(asked) > 0 {
		select {
		case r := <-a.replies:
			if r.nonce != nonce || !asked[r.node] {
				continue // an earlier rebuild's, or unasked
			}
			delete(asked, r.node)
			entries[r.node] = r.clients
		case <-deadline:
			a.stats.unreported.Add(uint64(len(asked)))
			a.log.Warn("nodes did not report their half-open connections in time", "nodes", len(asked))
			asked = nil
		}
	}
	a.table.Rebuild(entries)
	n := 0
	for _, c := range entries {
		n += len(c)
	}
	a.stats.rebuilt.Add(uint64(n))
	a.stats.rebuilds.Add(1)
	a.log.Info("SYN table rebuilt from the nodes' half-open connections", "entries", n, "nodes", len(entries))
}

// answer replies to a master's half-open query.
func (a *Agent) answer(to *net.UDPAddr, query []byte) {
	if len(query) != 8 {
		return
	}
	clients, err := a.halfOpen()
	if err != nil {
		a.log.Warn("cannot read this node's half-open connections", "err", err)
		return
	}
	r := encodeMsg(replyMagic, a.cfg.Key, a.cfg.Self, time.Now(), encodeHalfOpen(binary.BigEndian.Uint64(query), clients))
	if _, err := a.udp.WriteToUDP(r, to); err != nil {
		a.log.Warn("cannot answer a half-open query", "to", to, "err", err)
	}
}

// halfOpen lists this node's half-open connections to the cluster address.
func (a *Agent) halfOpen() ([]netip.AddrPort, error) {
	f, err := os.Open("/proc/self/net/tcp")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseHalfOpen(f, netip.AddrPortFrom(a.cfg.Addr.Addr(), a.cfg.Port))
}
