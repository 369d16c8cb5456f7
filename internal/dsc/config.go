package dsc

import (
	"log/slog"
	"net"
	"net/netip"
	"time"
)

// Config configures a node's single-address agent.
type Config struct {
	// Addr is the cluster address and its prefix, put on Iface of every
	// node; Port the TCP port clients connect to.
	Addr netip.Prefix
	Port uint16
	// Iface is the client-side interface (on a segment where every node
	// sees every frame).
	Iface string
	// MAC is the MAC every node puts on Iface (default: 02: followed by
	// the cluster address, the same on every node).
	MAC net.HardwareAddr
	// Listen is the UDP address this node receives forwarded SYNs on.
	Listen string
	// Key signs forwarded SYNs (transport.Key.HandoverKey).
	Key []byte
	// Self is this node's ID.
	Self string
	// Choose places a new connection (the front door's scheduler).
	Choose func(client netip.AddrPort) (node string, ok bool)
	// Nodes lists the cluster's live nodes (a new master asks each for its
	// half-open connections).
	Nodes func() []string
	// AgentAddr returns the UDP address of node id's agent.
	AgentAddr func(id string) (string, bool)
	// Recognised returns the master this node accepts SYNs from (the
	// dispatcher role's holder in its view).
	Recognised func() string
	Logger     *slog.Logger
}

// Stats are the agent's counters.
type Stats struct {
	Master        bool   `json:"master"`
	Tapped        uint64 `json:"tapped"`        // client SYNs the master saw
	Retransmitted uint64 `json:"retransmitted"` // of those, sent where the table said
	Forwarded     uint64 `json:"forwarded"`     // sent to another node
	Injected      uint64 `json:"injected"`      // written into this node's TUN
	Refused       uint64 `json:"refused"`       // forwarded SYNs refused (key, time, master)
	Unplaced      uint64 `json:"unplaced"`      // SYNs no node could take
	Errors        uint64 `json:"errors"`        // send or inject failures
	Stale         uint64 `json:"stale"`         // SYNs that waited > 1 s in the tap (a paused master): dropped
	Rebuilds      uint64 `json:"rebuilds"`      // times this node rebuilt the SYN table on becoming master
	Rebuilt       uint64 `json:"rebuilt"`       // half-open connections those rebuilds found
	Unreported    uint64 `json:"unreported"`    // nodes that did not report in time
}

// staleSYN is how long a tapped SYN may have waited before it is placed.
const staleSYN = time.Second
