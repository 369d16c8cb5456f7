package dsc

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"time"
)

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
func (a *Agent) rebuild(nodes []Node, wait time.Duration) map[string][]netip.AddrPort {
	nonce := rand.Uint64()
	entries := map[string][]netip.AddrPort{}
	if own, err := a.halfOpen(); err == nil {
		entries[a.cfg.Self] = own
	} else {
		a.log.Warn("cannot read this node's half-open connections", "err", err)
	}
	asked := map[string]bool{}
	q := encodeMsg(queryMagic, a.cfg.Key, a.cfg.Self, time.Now(), binary.BigEndian.AppendUint64(nil, nonce))
	for _, n := range nodes {
		if n.ID == a.cfg.Self || !n.Live {
			continue
		}
		ua, ok := a.peer(n.ID)
		if !ok {
			continue
		}
		if _, err := a.udp.WriteToUDP(q, ua); err == nil {
			asked[n.ID] = true
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
	return entries
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
