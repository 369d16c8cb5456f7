package transport

import (
	"context"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// raftLayer is a raft.StreamLayer over the mux's 'R' connections.
type raftLayer struct {
	*subListener
}

var _ raft.StreamLayer = (*raftLayer)(nil)

// RaftLayer returns the raft.StreamLayer of this mux (always the same
// value). Its Close closes only the 'R' sub-listener, as raft's
// NetworkTransport does on shutdown.
func (m *Mux) RaftLayer() raft.StreamLayer { return m.raft }

// Dial opens an authenticated 'R' connection to address.
func (r *raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return r.m.Dial(ctx, string(address), ProtoRaft)
}
