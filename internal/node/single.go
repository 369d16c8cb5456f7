package node

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/mure-dev/mure/internal/dsc"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/meta"
)

// DefaultSYNPort is where single-address nodes receive forwarded SYNs.
const DefaultSYNPort = 7945

// startSingleAddress makes this node own the cluster address (fc.VIP on
// fc.VIPIface, shared by every node) and serve its client API there too;
// the front door's role then makes it the SYN master (docs/dispatch.md).
func (n *Node) startSingleAddress(ctx context.Context, fc frontdoor.Config, key []byte) error {
	prefix, err := netip.ParsePrefix(fc.VIP)
	if err != nil || fc.VIPIface == "" {
		return fmt.Errorf("single-address mode needs --front-vip ADDR/PREFIX (the cluster address) and --front-iface IF (the client-side interface)")
	}
	ap, err := netip.ParseAddrPort(fc.Addr)
	if err != nil || ap.Addr() != prefix.Addr() {
		return fmt.Errorf("single-address mode: --front must be the cluster address and a port (%s:PORT), not %q", prefix.Addr(), fc.Addr)
	}
	port := fc.SYNPort
	if port == 0 {
		port = DefaultSYNPort
	}
	host, _, _ := net.SplitHostPort(n.mux.Addr())
	agentAddr := func(id string) (string, bool) {
		for _, m := range n.cl.Members() {
			if m.ID == id {
				h, _, err := net.SplitHostPort(m.PeerAddr)
				return net.JoinHostPort(h, strconv.Itoa(port)), err == nil
			}
		}
		return "", false
	}
	n.dsc, err = dsc.Start(ctx, dsc.Config{
		Addr: prefix, Port: ap.Port(), Iface: fc.VIPIface,
		Listen: net.JoinHostPort(host, strconv.Itoa(port)), Key: key, Self: n.ID(), SYNPath: fc.SYNPath,
		Members: func() []string {
			var ids []string
			for _, m := range n.cl.Members() {
				if m.State != "" && m.State != meta.NodeRemoved { // the catalogue's: the same on every node
					ids = append(ids, m.ID)
				}
			}
			return ids
		},
		Policy: n.door.Policy,
		Down:   n.door.Down,
		Figures: func() map[string]dsc.Figure {
			figs := map[string]dsc.Figure{}
			for _, m := range n.cl.Members() {
				if m.Load != nil {
					figs[m.ID] = dsc.Figure{Connections: m.Load.Connections, At: m.Load.Time()}
				}
			}
			return figs
		},
		Choose:    func(c netip.AddrPort) (string, bool) { return n.door.Choose(c) },
		AgentAddr: agentAddr,
		Nodes: func() []string {
			var ids []string
			for _, m := range n.cl.Members() {
				if !n.door.Down(m.ID) {
					ids = append(ids, m.ID)
				}
			}
			return ids
		},
		Recognised: func() string { id, _ := n.cl.Dispatcher(); return id },
		Logger:     n.log.With("part", "single-address"),
	})
	if err != nil {
		return err
	}
	if err := n.reg.Register(dsc.Collector(n.dsc.Stats)); err != nil {
		n.log.Warn("single-address metrics not registered", "err", err)
	}
	ln, err := net.Listen("tcp", fc.Addr)
	if err != nil {
		n.dsc.Close(ctx)
		n.dsc = nil
		return fmt.Errorf("single-address mode: listen on the cluster address: %w", err)
	}
	n.serve(n.httpSrv, ln)
	return nil
}
