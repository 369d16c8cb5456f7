package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/mure-dev/mure/internal/meta"
)

// Member is one node as this node sees it: catalogue record, gossip
// liveness and raft role.
type Member struct {
	ID       string         `json:"id"`
	PeerAddr string         `json:"peer"`
	HTTPAddr string         `json:"http"`
	State    meta.NodeState `json:"state"`
	Gossip   GossipState    `json:"gossip"`
	Suffrage string         `json:"raft"` // voter, nonvoter, or none
	Leader   bool           `json:"leader,omitempty"`
	// Load is the member's latest gossiped load figures (nil: none yet).
	Load *Load `json:"load,omitempty"`
	// Supports is the namespaces and versions the member's state machine
	// applies, as it gossips them ("": an older binary, or not heard yet).
	Supports string `json:"supports,omitempty"`
	// Zone is the member's --zone label as it gossips it ("": none).
	Zone string `json:"zone,omitempty"`
	// RTTMillis is the round-trip time to the member as the node asked
	// measures it (Cluster.RTT), in milliseconds (absent: none yet, or the
	// node itself).
	RTTMillis float64 `json:"rtt_ms,omitempty"`
}

// Members returns every node known to the catalogue or to gossip.
func (c *Cluster) Members() []Member {
	byID := map[string]*Member{}
	c.fsm.Read(func(s *meta.State) {
		for _, n := range s.Nodes() {
			byID[n.ID] = &Member{ID: n.ID, PeerAddr: n.PeerAddr, HTTPAddr: n.HTTPAddr, State: n.State, Suffrage: "none"}
		}
	})
	for id, p := range c.gossip.view() {
		m := byID[id]
		if m == nil {
			m = &Member{ID: id, PeerAddr: p.addr, HTTPAddr: p.meta.HTTP, Suffrage: "none"}
			byID[id] = m
		}
		m.Gossip = p.state
		m.Load = p.meta.Load
		m.Supports = p.meta.Supports
		m.Zone = p.meta.Zone
		m.RTTMillis = millis(p.rtt.min())
	}
	if m := byID[c.cfg.NodeID]; m != nil {
		if l := c.localLoad(); l != nil {
			m.Load = l
		}
		m.Supports = c.supports
		m.Zone = c.cfg.Zone
	}
	if f := c.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			if m := byID[string(s.ID)]; m != nil {
				m.Suffrage = strings.ToLower(s.Suffrage.String())
			}
		}
	}
	leader, _ := c.Leader()
	out := make([]Member, 0, len(byID))
	for _, m := range byID {
		m.Leader = m.ID == leader
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Alive reports whether gossip currently sees node id alive (self: true).
func (c *Cluster) Alive(id string) bool {
	if id == c.cfg.NodeID {
		return true
	}
	return c.gossip.alive(id)
}

// RaftStats returns raft's own figures (state, term, indexes).
func (c *Cluster) RaftStats() map[string]string { return c.raft.Stats() }

type nodeReq struct {
	ID string `json:"id"`
}

// Leave takes this node out of the cluster gracefully: leadership is handed
// over, the node is removed from raft and marked as left, and gossip
// announces the departure. The node should be stopped afterwards.
func (c *Cluster) Leave(ctx context.Context) error {
	if c.IsLeader() {
		if err := c.raft.LeadershipTransfer().Error(); err != nil && len(c.raftPeerAddrs()) > 0 {
			return fmt.Errorf("hand over leadership: %w", err)
		}
	}
	if len(c.raftPeerAddrs()) > 0 {
		if err := c.callLeader(ctx, "/peer/cluster/leave", nodeReq{ID: c.cfg.NodeID}); err != nil {
			return fmt.Errorf("leave: %w", err)
		}
	}
	c.leaving.Store(true)
	return c.gossip.list.Leave(5 * time.Second)
}

// Remove takes a node that is gone out of the cluster for good: its copies
// stop counting and it may not rejoin with its old data.
func (c *Cluster) Remove(ctx context.Context, id string) error {
	return c.callLeader(ctx, "/peer/cluster/remove", nodeReq{ID: id})
}

// callLeader posts to the leader's peer API (locally when this node leads),
// retrying while there is no leader.
func (c *Cluster) callLeader(ctx context.Context, path string, in any) error {
	for {
		_, addr := c.Leader()
		var err error
		if addr == "" {
			err = ErrNoLeader
		} else {
			err = c.peerCall(ctx, addr, path, in, nil)
		}
		if err == nil || !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) handleLeave(w http.ResponseWriter, r *http.Request) {
	c.handleNodeOp(w, r, false)
}

func (c *Cluster) handleRemove(w http.ResponseWriter, r *http.Request) {
	c.handleNodeOp(w, r, true)
}

func (c *Cluster) handleNodeOp(w http.ResponseWriter, r *http.Request, remove bool) {
	var req nodeReq
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil || req.ID == "" {
		peerError(w, http.StatusBadRequest, "bad_request", "a node id is required")
		return
	}
	if !c.IsLeader() {
		peerError(w, http.StatusServiceUnavailable, "no_leader", "not the leader")
		return
	}
	if err := c.removeNode(r.Context(), req.ID, remove); err != nil {
		writePeerErr(w, err)
		return
	}
	writeJSON(w, map[string]string{"removed": req.ID})
}

// removeNode runs on the leader.
func (c *Cluster) removeNode(ctx context.Context, id string, forGood bool) error {
	var known *meta.Node
	c.fsm.Read(func(s *meta.State) {
		if n := s.Node(id); n != nil {
			cp := *n
			known = &cp
		}
	})
	if known == nil {
		return fmt.Errorf("%w: unknown node %q (see mure node list)", ErrRefused, id)
	}
	if forGood {
		if id == c.cfg.NodeID {
			return fmt.Errorf("%w: %s is the leader; run 'mure node leave' on it instead", ErrRefused, id)
		}
		if c.Alive(id) {
			return fmt.Errorf("%w: %s is alive; stop it first, or run 'mure node leave' on it", ErrRefused, id)
		}
	}
	if !forGood {
		// The catalogue says "left" before raft forgets the node: the
		// reconcile loop re-adds a live node that raft does not list
		// unless the catalogue says it left (and balanceVoters would then
		// promote it back to voter).
		info := *known
		info.State, info.Since = meta.NodeLeft, time.Now().UTC()
		if _, err := c.applyLocal(ctx, meta.Command{Kind: meta.KindNodeUpsert, Info: &info}); err != nil {
			return err
		}
	}
	if err := c.raft.RemoveServer(raft.ServerID(id), 0, 5*time.Second).Error(); err != nil {
		return fmt.Errorf("remove %s from raft: %w", id, err)
	}
	if forGood {
		_, err := c.applyLocal(ctx, meta.Command{Kind: meta.KindNodeRemove, Node: id})
		return err
	}
	return nil
}
