package main

import (
	"flag"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/dispatch"
	"github.com/mure-dev/mure/internal/frontdoor"
)

// frontFlags declares the front door's flags on fs; the returned function
// gives the front door's configuration after parsing (nil without --front).
func frontFlags(fs *flag.FlagSet) func() *frontdoor.Config {
	var c frontdoor.Config
	fs.StringVar(&c.Addr, "front", "", "the cluster's front door `ADDR`: opened by whichever node holds the dispatcher role, which sends each new connection to a node (docs/dispatch.md; default: off)")
	fs.StringVar(&c.Mode, "front-mode", frontdoor.ModeRedirect, "how the front door hands a connection over: redirect (307 to the node), proxy (relay its bytes) or single-address (every node owns --front-vip on --front-iface; the holder only places client SYNs; Linux, root, iptables)")
	fs.IntVar(&c.SYNPort, "front-syn-port", 7945, "single-address mode: UDP port on which nodes receive the SYNs the master forwards")
	fs.StringVar(&c.SYNPath, "front-syn-path", "auto", "single-address mode: how the master places SYNs: kernel (a TC program tags each SYN with its node and sends it back on the client segment; round-robin, least-connections or p2c), user (forwarded through user space; every policy), auto (kernel when the kernel takes it and runs the policy) or isn-hash (no master: each node takes the SYNs whose ISN modulo the node count is its rank; 001's static baseline)")
	fs.StringVar(&c.Policy, "front-policy", dispatch.NameLeastConnections, "scheduling policy: "+strings.Join(dispatch.PolicyNames, ", "))
	fs.DurationVar(&c.Affinity, "front-affinity", 0, "send a client address back to the same node for this long after its last connection (0: off)")
	fs.IntVar(&c.MaxConns, "front-max-conns", 10000, "connections the front door holds open at once; beyond, 503")
	fs.IntVar(&c.MaxConnsPerClient, "front-max-conns-per-client", 256, "connections one client address may hold open to the front door; beyond, 503")
	fs.StringVar(&c.VIP, "front-vip", "", "virtual IP (`ADDR/PREFIX`) the role's holder puts on --front-iface and announces by gratuitous ARP (needs root, ip and arping)")
	fs.StringVar(&c.VIPIface, "front-iface", "", "interface for --front-vip")
	probe := fs.Duration("front-probe", 100*time.Millisecond, "how often the role's holder dials every node's client port; a node whose port refuses gets no new connection before gossip finds it dead (0: off)")
	fs.DurationVar(&c.HeaderTimeout, "front-header-timeout", 5*time.Second, "redirect mode: how long a client may take to send a request's headers")
	return func() *frontdoor.Config {
		if c.Addr == "" {
			return nil
		}
		c.ProbeInterval = *probe
		if *probe <= 0 {
			c.ProbeInterval = -1 // off
		}
		return &c
	}
}
