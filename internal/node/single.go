package node

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/mure-dev/mure/internal/dsc"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/meta"
)

// DefaultSYNPort is where single-address nodes receive forwarded SYNs.
const DefaultSYNPort = 7945

// singleAddress returns the service that makes this node own the cluster
// address (fc.VIP on fc.VIPIface, shared by every node) and serve its
// client API there too; the front door's role then makes it the SYN
// master (docs/dispatch.md).
func (n *Node) singleAddress(fc frontdoor.Config, key []byte) (*dsc.Service, error) {
	prefix, err := netip.ParsePrefix(fc.VIP)
	if err != nil || fc.VIPIface == "" {
		return nil, fmt.Errorf("single-address mode needs --front-vip ADDR/PREFIX (the cluster address) and --front-iface IF (the client-side interface)")
	}
	ap, err := netip.ParseAddrPort(fc.Addr)
	if err != nil || ap.Addr() != prefix.Addr() {
		return nil, fmt.Errorf("single-address mode: --front must be the cluster address and a port (%s:PORT), not %q", prefix.Addr(), fc.Addr)
	}
	port := fc.SYNPort
	if port == 0 {
		port = DefaultSYNPort
	}
	door := func() *frontdoor.Door { return n.door.Door() }
	return dsc.NewService(dsc.Config{
		Addr: prefix, Port: ap.Port(), Iface: fc.VIPIface, Key: key, SYNPath: fc.SYNPath,
		Nodes:      n.singleAddressNodes,
		Policy:     func() string { return door().Policy() },
		Down:       func(id string) bool { return door().Down(id) },
		Choose:     func(c netip.AddrPort) (string, bool) { return door().Choose(c) },
		Recognised: func() string { id, _ := n.cl.Dispatcher(); return id },
	}, port, fc.Addr), nil
}

// singleAddressNodes is the single-address agent's view of the cluster: the
// catalogue's nodes (the same on every node), from one walk of the
// membership.
func (n *Node) singleAddressNodes() []dsc.Node {
	var out []dsc.Node
	door := n.Door()
	for _, m := range n.cl.Members() {
		if m.State == "" || m.State == meta.NodeRemoved {
			continue // known to gossip only, or gone for good
		}
		d := dsc.Node{ID: m.ID, Live: !door.Down(m.ID)}
		d.PeerHost, _, _ = net.SplitHostPort(m.PeerAddr)
		if m.Load != nil {
			d.Connections, d.At = m.Load.Connections, m.Load.Time()
		}
		out = append(out, d)
	}
	return out
}
