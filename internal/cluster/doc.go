// Package cluster owns a node's membership in the cluster: gossip
// (hashicorp/memberlist) to notice joins, leaves and deaths; consensus
// (hashicorp/raft over a persistent WAL) to replicate the meta state
// machine; the automatic choice of voters; and read leases, which let a
// node serve reads from its local state while the leader can still revoke
// them.
//
// It knows nothing about files: the file protocol hooks into Apply through
// Config.Barrier. Other namespaces' ops go through ApplyOp; every node
// gossips which namespace versions it applies, and the leader refuses an
// op a voter does not support.
package cluster
