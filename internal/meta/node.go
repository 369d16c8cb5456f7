package meta

import "time"

// NodeState is a node's standing in the catalogue (not its liveness, which
// comes from gossip).
type NodeState string

// Node states.
const (
	NodeActive  NodeState = "active"
	NodeFailed  NodeState = "failed"  // dead for longer than the failure grace: its copies do not count until it returns
	NodeLeft    NodeState = "left"    // left gracefully; may come back
	NodeRemoved NodeState = "removed" // removed for good
)

// Node is a member as recorded in the replicated state.
type Node struct {
	ID       string    `json:"id"`
	PeerAddr string    `json:"peer"`
	HTTPAddr string    `json:"http"`
	State    NodeState `json:"state"`
	Since    time.Time `json:"since"`
}
