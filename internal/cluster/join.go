package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// join contacts the configured members (and, on a restart, the ones raft
// remembers) and learns the cluster's ID from them.
func (c *Cluster) join(ctx context.Context, hasState bool) error {
	addrs := append([]string(nil), c.cfg.Join...)
	if hasState {
		addrs = append(addrs, c.raftPeerAddrs()...)
	}
	if len(addrs) == 0 {
		return nil
	}
	n, err := c.gossip.list.Join(addrs)
	if refused := c.mergeRefusal(); refused != nil {
		return refused
	}
	if n == 0 {
		if hasState {
			// A restarted node whose peers are down: keep going, the
			// rejoin loop retries. (--join only matters on a first start.)
			c.log.Warn("no member reachable; will retry", "addrs", addrs, "err", err)
			return nil
		}
		return fmt.Errorf("%w via %v: %v", ErrJoin, addrs, err)
	}
	return c.learnClusterID(ctx)
}

// learnClusterID adopts the cluster ID gossiped by the members, or checks
// that it matches the one this node already has.
func (c *Cluster) learnClusterID(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		for id, p := range c.gossip.view() {
			if id == c.cfg.NodeID || p.meta.Cluster == "" {
				continue
			}
			ours := c.ClusterID()
			switch {
			case ours == "":
				c.idMu.Lock()
				c.clusterID = p.meta.Cluster
				c.idMu.Unlock()
				return c.gossip.list.UpdateNode(time.Second)
			case ours != p.meta.Cluster:
				return fmt.Errorf("%w: this data directory belongs to cluster %s but node %s (%s) is in cluster %s", ErrOtherCluster, ours, id, p.addr, p.meta.Cluster)
			default:
				return nil
			}
		}
		if time.Now().After(deadline) {
			if c.ClusterID() != "" {
				return nil
			}
			return fmt.Errorf("%w: the members reached did not tell their cluster ID", ErrJoin)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// raftPeerAddrs returns the peer addresses raft remembers, self excluded.
func (c *Cluster) raftPeerAddrs() []string {
	f := c.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	var out []string
	for _, s := range f.Configuration().Servers {
		if s.ID != raft.ServerID(c.cfg.NodeID) {
			out = append(out, string(s.Address))
		}
	}
	return out
}

// rejoinLoop retries gossip contact with raft's peers while this node sees
// nobody else (e.g. it restarted while the others were down).
func (c *Cluster) rejoinLoop(ctx context.Context) {
	t := time.NewTicker(10 * c.cfg.Timing.GossipProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.gossip.list.NumMembers() > 1 {
			continue
		}
		if addrs := c.raftPeerAddrs(); len(addrs) > 0 {
			if _, err := c.gossip.list.Join(addrs); err == nil {
				c.log.Info("rejoined gossip", "addrs", addrs)
			}
		}
	}
}
