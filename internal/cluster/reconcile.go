package cluster

import (
	"context"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/mure-dev/mure/internal/meta"
)

// reconcileLoop runs on every node but acts only on the leader: it brings
// raft's configuration and the node catalogue in line with what gossip
// sees, and keeps the number of voters right.
func (c *Cluster) reconcileLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.Timing.Reconcile)
	defer t.Stop()
	deadSince := map[string]time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.kickCh:
		}
		if !c.IsLeader() {
			clear(deadSince)
			continue
		}
		if err := c.reconcile(ctx, deadSince); err != nil && ctx.Err() == nil {
			c.log.Warn("reconcile", "err", err)
		}
	}
}

func (c *Cluster) reconcile(ctx context.Context, deadSince map[string]time.Time) error {
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	servers := map[string]raft.Server{}
	for _, s := range f.Configuration().Servers {
		servers[string(s.ID)] = s
	}
	view := c.gossip.view()
	ours := c.ClusterID()
	var nodes map[string]meta.Node
	c.fsm.Read(func(s *meta.State) {
		nodes = map[string]meta.Node{}
		for _, n := range s.Nodes() {
			nodes[n.ID] = n
		}
	})
	timeout := 5 * time.Second

	for id, p := range view {
		if p.meta.Cluster != ours {
			continue
		}
		n, known := nodes[id]
		if known && n.State == meta.NodeRemoved {
			continue
		}
		switch p.state {
		case GossipAlive, GossipSuspect:
			if known && n.State == meta.NodeLeft && !p.since.After(n.Since) {
				// It left after gossip last saw it come up: its departure
				// is still on its way through gossip. Only a later
				// rejoin brings it back.
				continue
			}
			if !known || n.State != meta.NodeActive || n.PeerAddr != p.addr || n.HTTPAddr != p.meta.HTTP {
				info := &meta.Node{ID: id, PeerAddr: p.addr, HTTPAddr: p.meta.HTTP, State: meta.NodeActive, Since: time.Now().UTC()}
				if _, err := c.applyLocal(ctx, meta.Command{Kind: meta.KindNodeUpsert, Info: info}); err != nil {
					return err
				}
			}
			if srv, in := servers[id]; in && string(srv.Address) != p.addr && id != c.cfg.NodeID {
				// The node came back on another address: re-adding an
				// existing ID updates its address, keeping its suffrage.
				c.log.Info("updating node address", "node", id, "addr", p.addr)
				add := c.raft.AddNonvoter
				if srv.Suffrage == raft.Voter {
					add = c.raft.AddVoter
				}
				if err := add(raft.ServerID(id), raft.ServerAddress(p.addr), 0, timeout).Error(); err != nil {
					return err
				}
				srv.Address = raft.ServerAddress(p.addr)
				servers[id] = srv
			}
			if _, in := servers[id]; !in {
				c.log.Info("adding non-voter", "node", id, "addr", p.addr)
				if err := c.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(p.addr), 0, timeout).Error(); err != nil {
					return err
				}
				servers[id] = raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(p.addr), Suffrage: raft.Nonvoter}
			}
		case GossipDead:
			if known && n.State == meta.NodeActive && c.cfg.Timing.FailedAfter > 0 && time.Since(p.since) > c.cfg.Timing.FailedAfter {
				c.log.Warn("node failed", "node", id, "dead_for", time.Since(p.since).Round(time.Second))
				info := n
				info.State, info.Since = meta.NodeFailed, time.Now().UTC()
				if _, err := c.applyLocal(ctx, meta.Command{Kind: meta.KindNodeUpsert, Info: &info}); err != nil {
					return err
				}
			}
		case GossipLeft:
			if _, in := servers[id]; in && id != c.cfg.NodeID {
				c.log.Info("removing node that left", "node", id)
				if err := c.raft.RemoveServer(raft.ServerID(id), 0, timeout).Error(); err != nil {
					return err
				}
				delete(servers, id)
			}
			if known && n.State == meta.NodeActive {
				info := n
				info.State, info.Since = meta.NodeLeft, time.Now().UTC()
				if _, err := c.applyLocal(ctx, meta.Command{Kind: meta.KindNodeUpsert, Info: &info}); err != nil {
					return err
				}
			}
		}
	}
	return c.balanceVoters(servers, view, deadSince)
}

// balanceVoters keeps 3 voters (5 from 5 nodes on), replacing a voter dead
// for longer than the grace period by a live non-voter.
func (c *Cluster) balanceVoters(servers map[string]raft.Server, view map[string]peerView, deadSince map[string]time.Time) error {
	timeout := 5 * time.Second
	alive := func(id string) bool {
		if id == c.cfg.NodeID {
			return true
		}
		p, ok := view[id]
		return ok && (p.state == GossipAlive || p.state == GossipSuspect)
	}
	var voters, standby []string
	for id, s := range servers {
		if s.Suffrage == raft.Voter {
			voters = append(voters, id)
		} else if alive(id) {
			standby = append(standby, id)
		}
	}
	slices.Sort(voters)
	slices.Sort(standby)
	want := 3
	if len(servers) >= 5 {
		want = 5
	}
	now := time.Now()
	for _, v := range voters {
		if alive(v) {
			delete(deadSince, v)
			continue
		}
		if _, ok := deadSince[v]; !ok {
			deadSince[v] = now
		}
		if now.Sub(deadSince[v]) > c.cfg.Timing.DeadVoterGrace && len(standby) > 0 {
			c.log.Warn("demoting dead voter", "node", v, "dead_for", now.Sub(deadSince[v]).Round(time.Second))
			if err := c.raft.DemoteVoter(raft.ServerID(v), 0, timeout).Error(); err != nil {
				return err
			}
			voters = slices.DeleteFunc(voters, func(id string) bool { return id == v })
			delete(deadSince, v)
		}
	}
	for len(voters) < want && len(standby) > 0 {
		id := standby[0]
		standby = standby[1:]
		c.log.Info("promoting to voter", "node", id)
		if err := c.raft.AddVoter(raft.ServerID(id), servers[id].Address, 0, timeout).Error(); err != nil {
			return err
		}
		voters = append(voters, id)
	}
	return nil
}
