package dispatch

import (
	"encoding/binary"
	"hash/fnv"
	"net/netip"
	"time"
)

// NodeLoad is what a node reports about itself through gossip, plus the
// dispatcher's own count of connections it sent there since that report.
type NodeLoad struct {
	// ID names the node in the cluster; ties between equal nodes are broken
	// by it, so decisions are reproducible.
	ID string `json:"id"`
	// Addr is where handed-over connections go (host:port).
	Addr string `json:"addr"`
	// Connections is the number of client connections the node has open.
	Connections int `json:"connections"`
	// CPU is the fraction of the node's CPU quota (its cgroup's, or the
	// machine's) used over the last interval: 0 idle, 1 saturated; it may
	// exceed 1 briefly when the quota is enforced late.
	CPU float64 `json:"cpu"`
	// Load is the node's run queue per core (or load average per core):
	// work waiting, which CPU alone does not show once it reaches 1.
	Load float64 `json:"load"`
	// FreeMemory is the memory the node could still use, in bytes (page
	// cache counted as free, as 004 does).
	FreeMemory int64 `json:"free_memory_bytes"`
	// Alive is the membership's view: false once gossip declares the node
	// dead or it leaves. A node that is not alive is never chosen.
	Alive bool `json:"alive"`
	// At is when the node took these figures.
	At time.Time `json:"at"`

	// Assigned is set by the Scheduler, not by the node: the connections
	// this dispatcher handed to the node since its last report, which the
	// reported figures cannot show yet.
	Assigned int `json:"assigned,omitempty"`
	// LastChosen is set by the Scheduler: the sequence number of its last
	// decision for this node (0: never). Policies break ties by it, least
	// recently chosen first, so equal figures rotate instead of piling on
	// the lowest ID.
	LastChosen uint64 `json:"-"`
	// Covered is set by the Scheduler: how many of its assignments the
	// node's latest report was the first to cover — the connections that
	// produced the reported figures, for policies that need a cost per
	// connection (LeastLoad).
	Covered int `json:"-"`
}

// busy is the connection count a policy should compare: reported plus the
// dispatcher's own assignments not yet reflected in the report.
func (n NodeLoad) busy() int { return n.Connections + n.Assigned }

// Conn describes a new client connection as the dispatcher sees it before
// handing it over.
type Conn struct {
	// Client is the client's address and port.
	Client netip.AddrPort
}

// Hash is a stable 64-bit hash of the client's address and port (FNV-1a
// over the 16-byte address and the port). It depends on nothing else, so
// the same client address:port always hashes the same, on every dispatcher.
func (c Conn) Hash() uint64 {
	var b [18]byte
	a := c.Client.Addr().As16()
	copy(b[:16], a[:])
	binary.BigEndian.PutUint16(b[16:], c.Client.Port())
	h := fnv.New64a()
	h.Write(b[:])
	return h.Sum64()
}
