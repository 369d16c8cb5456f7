package dsc

import (
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/mure-dev/mure/internal/dispatch"
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
	// Listen is the UDP address this node receives forwarded SYNs on; every
	// node's agent listens on the same port.
	Listen string
	// Key signs forwarded SYNs (transport.Key.HandoverKey).
	Key []byte
	// Self is this node's ID.
	Self string
	// Choose places a new connection (the front door's scheduler).
	Choose func(client netip.AddrPort) (node string, ok bool)
	// SYNPath is how the master places SYNs: PathAuto (default), PathKernel,
	// PathUser or PathISN.
	SYNPath string
	// Nodes lists the nodes of the cluster's catalogue, live or not: the
	// same list on every node, so that ranks (the kernel path's tags),
	// positions in its sorted IDs, agree. Read once per control tick.
	Nodes func() []Node
	// Policy names the scheduling policy in force (dispatch's names). The
	// kernel path runs round-robin, least-connections and p2c; any other
	// policy is placed by the user path.
	Policy func() string
	// Down, when set, reports a node found dead by the front door's probes:
	// a retransmitted SYN remembered for it is placed afresh.
	Down func(id string) bool
	// Recognised returns the master this node accepts SYNs from (the
	// dispatcher role's holder in its view).
	Recognised func() string
	Logger     *slog.Logger
}

// Node is what the agent knows of one of the cluster's nodes.
type Node struct {
	ID string
	// PeerHost is its address on the node-to-node network: its agent
	// listens there on the same SYN port as this one's.
	PeerHost string
	// Live: alive, and its client port answers the front door's probes.
	Live bool
	// Connections is its last reported count of open client connections,
	// taken At (zero: no report yet): least connections and p2c.
	Connections int
	At          time.Time
}

// The policies the kernel path runs. Least connections and p2c score a
// node by its last reported connections plus what the program has placed on
// it since.
const (
	policyRR = iota
	policyLC
	policyP2C
)

// KernelPolicies are the policies the kernel path runs, by name.
var KernelPolicies = map[string]int{
	dispatch.NameRoundRobin: policyRR, dispatch.NameLeastConnections: policyLC, dispatch.NamePowerOfTwo: policyP2C,
}

// How the master places SYNs.
const (
	// PathAuto: the kernel path when the kernel takes the program and the
	// policy runs there, else the user path.
	PathAuto = "auto"
	// PathKernel: a TC program on the master's client interface tags each
	// SYN with its node and sends it back out on the client segment
	// (kprog_linux.go); failing to load it is an error.
	PathKernel = "kernel"
	// PathUser: the master taps SYNs with an AF_PACKET socket and forwards
	// them in UDP datagrams to the node's TUN device; every policy.
	PathUser = "user"
	// PathISN: no master; each node takes the SYNs whose initial sequence
	// number modulo the node count is its rank (001's static baseline).
	PathISN = "isn-hash"
)

// Stats are the agent's counters.
type Stats struct {
	Master        bool   `json:"master"`
	Path          string `json:"path,omitempty"`       // how this node places SYNs now (master, or isn-hash)
	AcceptTag     string `json:"accept_tag,omitempty"` // kernel path: the SYN tag this node takes (master rank/own rank of ranked nodes)
	Tapped        uint64 `json:"tapped"`               // client SYNs the master saw
	Retransmitted uint64 `json:"retransmitted"`        // of those, sent where the table said
	Forwarded     uint64 `json:"forwarded"`            // sent to another node
	Injected      uint64 `json:"injected"`             // written into this node's TUN
	Refused       uint64 `json:"refused"`              // forwarded SYNs refused (key, time, master)
	Unplaced      uint64 `json:"unplaced"`             // SYNs no node could take
	Errors        uint64 `json:"errors"`               // send or inject failures
	Stale         uint64 `json:"stale"`                // SYNs that waited > 1 s in the tap (a paused master): dropped
	Rebuilds      uint64 `json:"rebuilds"`             // times this node rebuilt the SYN table on becoming master
	Rebuilt       uint64 `json:"rebuilt"`              // half-open connections those rebuilds found
	Unreported    uint64 `json:"unreported"`           // nodes that did not report in time
	Expired       uint64 `json:"expired"`              // client SYNs the kernel path saw without a valid lease (not placed)
}

// synTTL is how long the master remembers where a client's SYN went (a
// handshake not completed by then has failed anyway).
const synTTL = 30 * time.Second

// staleSYN is how long a tapped SYN may have waited before it is placed.
const staleSYN = time.Second
