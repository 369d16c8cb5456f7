// Package dispatch decides which node takes a new client connection: the
// scheduling half of the front door of issue 5 (paper 001's master, which
// picks a node for every SYN by a replaceable policy).
//
// It is pure: no sockets, no goroutines, no gossip. The front door (to come,
// in this package) accepts a connection, asks a Scheduler for a node, and
// hands the connection over by redirect or proxy; the cluster package feeds
// the Scheduler each node's live figures (NodeLoad) as they arrive through
// gossip. Keeping the decision apart from the network lets every policy be
// tested on synthetic figures, and lets the benchmarks switch policies
// without touching the hand-over code.
//
// Reported figures are always a little old: a node reports every interval,
// and in between the dispatcher may hand it many connections. A policy that
// trusted the reports alone would send a whole burst to the node that looked
// idlest at the last report (herding). The Scheduler therefore counts its
// own assignments since each node's last report (NodeLoad.Assigned) and the
// feedback policies add them to the reported figures.
//
// The static baseline, StaticHash, has no feedback at all: a hash of the
// client's address and port modulo the number of nodes. It stands in for
// 001's baseline, which took the client's initial sequence number mod N;
// at L7 the sequence number is not visible, so the name says what it is.
//
// Affinity remembers client → node for a while, so that a client's retried
// or follow-up connections reach the node that already knows it. Neither it
// nor the in-flight counters hold anything that established traffic needs:
// a new dispatcher starts with empty tables and only loses balance quality.
package dispatch
