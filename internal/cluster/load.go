package cluster

import (
	"context"
	"time"
)

// Load is what a node tells the others about how busy it is. Gossip
// carries it in the node's metadata (memberlist allows 512 bytes; a Load
// takes about 100), re-broadcast every Timing.LoadInterval.
type Load struct {
	// Connections is the number of client connections the node has open.
	Connections int `json:"n"`
	// CPU is the fraction of the node's CPU quota (its cgroup's, or the
	// machine's cores) used over the last interval.
	CPU float64 `json:"u"`
	// RunQueue is work waiting for a CPU, per core (CPU pressure when the
	// node's cgroup reports it, the machine's load average otherwise).
	RunQueue float64 `json:"r"`
	// FreeMemory is the memory the node could still use, in bytes.
	FreeMemory int64 `json:"m"`
	// At is when the node took the figures (Unix milliseconds, its clock).
	At int64 `json:"t"`
}

// Time returns At as a time.
func (l Load) Time() time.Time { return time.UnixMilli(l.At) }

// loadLoop re-broadcasts this node's metadata, and with it fresh load
// figures, every LoadInterval.
func (c *Cluster) loadLoop(ctx context.Context) {
	if c.cfg.Load == nil || c.cfg.Timing.LoadInterval <= 0 {
		return
	}
	t := time.NewTicker(c.cfg.Timing.LoadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l := c.cfg.Load()
			c.loadMu.Lock()
			c.load = &l
			c.loadMu.Unlock()
			// UpdateNode asks the delegate for the metadata again and
			// gossips it; it waits for the broadcast at most this long.
			// Never after Leave: the alive message it sends would bring
			// the node back to life in the others' views.
			if c.leaving.Load() {
				return
			}
			if err := c.gossip.list.UpdateNode(c.cfg.Timing.LoadInterval); err != nil && ctx.Err() == nil {
				c.log.Debug("gossip load figures", "err", err)
			}
		}
	}
}

// localLoad returns the figures last taken (nil before the first).
func (c *Cluster) localLoad() *Load {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	return c.load
}
