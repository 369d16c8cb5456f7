package cluster

import (
	"context"
	"log/slog"
	"time"

	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
	"github.com/mure-dev/mure/internal/transport"
)

// Config is what a node needs to take part in a cluster.
type Config struct {
	// NodeID is this node's stable identity (kept in its data directory).
	NodeID string
	// ClusterID names the cluster; empty on a node that has not joined
	// one yet (it learns the ID from the members it joins).
	ClusterID string
	// Dir holds raft's log, stable store and snapshots.
	Dir string
	// LogFS is the file system raft's log and stable store live on, in
	// Dir/raft/log (nil: the operating system's). Tests only: a disk that
	// loses power (store/crashfs).
	LogFS store.FS
	// NoSync skips the log's fsyncs (tests and benchmarks only).
	NoSync bool
	// HTTPAddr is the advertised client API address, gossiped to others so
	// that they can redirect clients here.
	HTTPAddr string
	// Zone is the label of the place this node runs in (a rack, a room, a
	// data centre; "" for none), gossiped with its address: reads prefer
	// a replica in their own zone (docs/decisions/0036). See ValidZone.
	Zone string
	// Mux carries gossip, raft and the peer HTTP API on one port.
	Mux *transport.Mux
	// Key is the cluster key; gossip is encrypted with a key derived from it.
	Key transport.Key
	// Join lists peer addresses of members to contact at start.
	Join []string
	// Bootstrap starts a new one-node cluster when Dir holds no raft state
	// and Join is empty.
	Bootstrap bool
	// Barrier runs on the leader after a command that invalidated copies
	// was applied, before the proposer is answered (see docs/protocol.md).
	Barrier func(ctx context.Context, r *meta.Result) error
	// Load, when set, is called every Timing.LoadInterval for this node's
	// live figures, which gossip carries to every member (paper 004's
	// load sharing; the front door's policies read them).
	Load func() Load
	// Parts are the state machine's namespaces besides the core
	// (meta.Part); every node of one binary passes the same ones, whether
	// or not their capability is on.
	Parts  []meta.Part
	Timing Timing
	Logger *slog.Logger
}

// Timing groups every timeout of the cluster layer. Production uses
// DefaultTiming; tests use FastTiming so that elections and failure
// detection take a fraction of a second.
type Timing struct {
	// Raft: heartbeat and election timeouts. Shorter detects a dead
	// leader sooner but risks needless elections on a loaded machine.
	RaftHeartbeat, RaftElection, RaftLeaderLease, RaftCommit time.Duration
	// Gossip: probe interval and timeout; a node is declared dead after
	// roughly SuspicionMult × log(N) × ProbeInterval.
	GossipProbeInterval, GossipProbeTimeout, GossipInterval time.Duration
	GossipSuspicionMult                                     int
	// ReadLease is how long a node may serve reads from its local state
	// after the leader last confirmed it. A write that invalidates a copy
	// on an unreachable node waits at most this long.
	ReadLease time.Duration
	// DeadVoterGrace is how long a voter may be dead before a live
	// non-voter replaces it.
	DeadVoterGrace time.Duration
	// FailedAfter is how long a node may be dead before it is recorded
	// as failed: its copies stop counting, files below their replication
	// factor are copied elsewhere, and its write rights are released.
	// Shorter heals sooner but copies data for a node that was only
	// rebooting.
	FailedAfter time.Duration
	// Reconcile is the period of the leader's membership reconciliation.
	Reconcile time.Duration
	// SnapshotThreshold is the number of log entries after which raft
	// snapshots the state; SnapshotTrailing the entries kept after a
	// snapshot for slow followers (a follower further behind receives the
	// snapshot instead).
	SnapshotThreshold, SnapshotTrailing uint64
	// LoadInterval is how often a node gossips its load figures.
	LoadInterval time.Duration
	// DispatchFallback is how long the cluster may have no raft leader
	// before the dispatcher role falls to the lowest-ID live member (see
	// Cluster.Dispatcher); meanwhile the previous holder keeps it if it
	// still answers gossip, so an election moves the role once, not twice.
	DispatchFallback time.Duration
	// DispatchHold is how long a new raft leader must lead before the role
	// moves to it from a holder that still answers gossip: a short
	// leadership flap on a saturated node does not move the front door.
	// It adds to a failover only while gossip has not yet found the old
	// holder dead.
	DispatchHold time.Duration
}

// DefaultTiming suits a LAN. It is tuned so that writes are accepted
// again within 2 s of the raft leader's death, the write right of its
// files included (docs/decisions/0017-failover-timings.md): raft notices
// a dead leader in 0.3–0.9 s and elects another, which waits out the old
// leader's read leases (ReadLease) before it invalidates a copy; gossip
// finds the dead holder of a right in about 0.2–0.6 s of probing plus
// 0.6 s of suspicion, after which a write takes the right over.
func DefaultTiming() Timing {
	return Timing{
		RaftHeartbeat: 300 * time.Millisecond, RaftElection: 300 * time.Millisecond, RaftLeaderLease: 300 * time.Millisecond, RaftCommit: 20 * time.Millisecond,
		GossipProbeInterval: 200 * time.Millisecond, GossipProbeTimeout: 100 * time.Millisecond, GossipInterval: 100 * time.Millisecond, GossipSuspicionMult: 3,
		ReadLease: time.Second, DeadVoterGrace: 30 * time.Second, FailedAfter: 30 * time.Second, Reconcile: time.Second,
		SnapshotThreshold: 16384, SnapshotTrailing: 10240,
		LoadInterval: 500 * time.Millisecond, DispatchFallback: 3 * time.Second, DispatchHold: time.Second,
	}
}

// FastTiming is for tests on one machine: failures are noticed in well
// under a second.
func FastTiming() Timing {
	return Timing{
		RaftHeartbeat: 150 * time.Millisecond, RaftElection: 150 * time.Millisecond, RaftLeaderLease: 100 * time.Millisecond, RaftCommit: 10 * time.Millisecond,
		GossipProbeInterval: 100 * time.Millisecond, GossipProbeTimeout: 50 * time.Millisecond, GossipInterval: 50 * time.Millisecond, GossipSuspicionMult: 2,
		ReadLease: 600 * time.Millisecond, DeadVoterGrace: 2 * time.Second, FailedAfter: 1500 * time.Millisecond, Reconcile: 100 * time.Millisecond,
		SnapshotThreshold: 16384, SnapshotTrailing: 10240,
		LoadInterval: 100 * time.Millisecond, DispatchFallback: 500 * time.Millisecond, DispatchHold: 200 * time.Millisecond,
	}
}
