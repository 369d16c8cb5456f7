package testcluster

import "github.com/mure-dev/mure/client"

// Verbs are what both kinds of test cluster offer under the same names, so
// that a test can run on either: an in-process Cluster (node.Open in this
// process) or a ProcCluster (the built binary, one process per node).
// Only a ProcCluster can Pause and Resume a node (SIGSTOP, SIGCONT): a
// node sharing this process cannot be frozen alone.
type Verbs interface {
	// Kill takes node i down as a crash would (SIGKILL; in process, Close).
	Kill(i int)
	// Stop stops node i gracefully and returns how that went.
	Stop(i int) error
	// Restart starts node i again with only its data directory.
	Restart(i int)
	// Leader waits for a leader among the running nodes and returns it.
	Leader() int
	// Running lists the nodes started and not taken down.
	Running() []int
	// WaitReady waits until node i answers /readyz.
	WaitReady(i int)
	// Client returns a client of the given nodes (all when none).
	Client(nodes ...int) *client.Client
	// HTTPAddr is node i's client API address.
	HTTPAddr(i int) string
	// ID is node i's ID.
	ID(i int) string
	// Token is the cluster's admin credential, which Client uses.
	Token() string
}

var (
	_ Verbs = (*Cluster)(nil)
	_ Verbs = (*ProcCluster)(nil)
)
