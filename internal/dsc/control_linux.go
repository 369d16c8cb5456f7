package dsc

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/mure-dev/mure/internal/dispatch"
)

const (
	// controlEvery is how often the control loop looks at the role, the
	// membership and the policy (and renews the kernel path's lease).
	controlEvery = 50 * time.Millisecond
	// kernelLease is how long the kernel path places SYNs without hearing
	// from this process: a paused master stops placing after it.
	kernelLease = 400 * time.Millisecond
	// noTag is a tag no master gives (ranks are below maxRanks).
	noTag = 0xffff
)

// controlState is what the control loop remembers between ticks.
type controlState struct {
	leading bool   // this node places SYNs
	tag     int    // the tag its filter accepts now
	conf    string // the kernel configuration last written, less the lease
	hist    []placedAt
}

// placedAt is the program's per-rank placements at a time.
type placedAt struct {
	at     time.Time
	placed [maxRanks]uint64
}

// RoleChanged tells the agent that the dispatcher role moved: the control
// loop looks at once instead of at its next tick.
func (a *Agent) RoleChanged() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func (a *Agent) controlLoop(ctx context.Context) {
	t := time.NewTicker(controlEvery)
	defer t.Stop()
	for {
		a.control(ctx)
		select {
		case <-ctx.Done():
			a.closeTap()
			return
		case <-t.C:
		case <-a.kick:
		}
	}
}

// control brings the node in line with the role, the membership and the
// policy: the tag its filter accepts (the recognised master's), whether it
// places SYNs, and by which path.
func (a *Agent) control(ctx context.Context) {
	nodes := a.cfg.Nodes()
	ranks := rankOf(nodes)
	self, okSelf := ranks[a.cfg.Self]
	recognised := a.cfg.Recognised()
	master, okMaster := ranks[recognised]
	isn := a.cfg.SYNPath == PathISN
	if isn {
		master, okMaster = self, okSelf
	}
	if a.kp != nil {
		tag := noTag
		if okSelf && okMaster {
			tag = master<<8 | self
		}
		if tag != a.ctl.tag {
			if err := a.host.acceptTag(ctx, tag); err != nil {
				a.log.Error("cannot set the tag this node accepts", "err", err)
			} else {
				a.ctl.tag = tag
			}
		}
		desc := ""
		if a.ctl.tag != noTag {
			desc = fmt.Sprintf("%d/%d of %d", a.ctl.tag>>8, a.ctl.tag&0xff, len(ranks))
		}
		a.tag.Store(desc)
	}
	if isn {
		// 001's static baseline: every node takes the SYNs whose ISN
		// modulo the number of nodes is its rank; there is no master.
		a.configure(kernelConfig{ISN: true, Master: self, Self: self, Ring: seq(len(ranks))})
		a.path.Store(PathISN)
		return
	}
	// The role's holder places SYNs; fencing: nothing while another master
	// is recognised here.
	want := recognised == a.cfg.Self
	switch {
	case want && !a.ctl.leading:
		entries := a.rebuild(nodes, rebuildWait)
		if a.kp != nil {
			byRank := map[int][]netip.AddrPort{}
			for node, clients := range entries {
				if r, ok := ranks[node]; ok {
					byRank[r] = clients
				}
			}
			if err := a.kp.remember(byRank); err != nil {
				a.log.Warn("the kernel path's SYN table is incomplete", "err", err)
			}
		}
		a.ctl.leading = true
		a.leader.Store(true)
		a.log.Info("SYN master on")
	case !want && a.ctl.leading:
		a.ctl.leading = false
		a.leader.Store(false)
		a.closeTap()
		a.log.Info("SYN master off")
	}
	conf := kernelConfig{Master: master, Self: self}
	switch {
	case a.ctl.leading && a.kp != nil && kernelPolicy(a.cfg.Policy()) >= 0:
		a.closeTap()
		conf.Lease = kernelLease
		conf.Policy = kernelPolicy(a.cfg.Policy())
		for _, n := range nodes {
			if r, ok := ranks[n.ID]; ok && n.Live {
				conf.Ring = append(conf.Ring, r)
			}
		}
		slices.Sort(conf.Ring)
		if conf.Policy != policyRR {
			conf.Load = a.loads(nodes, ranks)
		}
		a.path.Store(PathKernel)
	case a.ctl.leading:
		a.openTap()
		a.path.Store(PathUser)
	default:
		a.path.Store("")
	}
	a.configure(conf)
}

// kernelPolicy returns the kernel path's number for a policy, -1 when the
// kernel path does not run it.
func kernelPolicy(name string) int {
	if p, ok := KernelPolicies[name]; ok {
		return p
	}
	return -1
}

// loads turns the nodes' reported connections into the program's per-rank
// loads; the program's placements are sampled every tick and kept for 3 s.
func (a *Agent) loads(nodes []Node, ranks map[string]int) map[int]int64 {
	now := time.Now()
	a.ctl.hist = append(a.ctl.hist, placedAt{at: now, placed: a.kp.placedByRank()})
	for len(a.ctl.hist) > 1 && now.Sub(a.ctl.hist[0].at) > 3*time.Second {
		a.ctl.hist = a.ctl.hist[1:]
	}
	return loadsFrom(a.ctl.hist, nodes, ranks)
}

// loadsFrom computes each rank's load: its node's report less what had
// been placed on it by then (the latest sample at least the front door's
// connect lag before the report), so that the program adds only what it
// placed since. A report older than the samples takes the oldest; a node
// without a report counts from the latest sample (as if it held nothing).
func loadsFrom(hist []placedAt, nodes []Node, ranks map[string]int) map[int]int64 {
	load := make(map[int]int64, len(ranks))
	if len(hist) == 0 {
		return load
	}
	for _, f := range nodes {
		r, ok := ranks[f.ID]
		if !ok {
			continue
		}
		if f.At.IsZero() {
			load[r] = -int64(hist[len(hist)-1].placed[r])
			continue
		}
		base := hist[0].placed[r]
		for _, h := range hist {
			if h.at.After(f.At.Add(-dispatch.DefaultConnectLag)) {
				break
			}
			base = h.placed[r]
		}
		load[r] = int64(f.Connections) - int64(base)
	}
	return load
}

// configure writes the kernel configuration when it changed or carries a
// lease (renewed every tick).
func (a *Agent) configure(c kernelConfig) {
	if a.kp == nil {
		return
	}
	key := c.String()
	if c.Lease == 0 && key == a.ctl.conf {
		return
	}
	if err := a.kp.configure(c); err != nil {
		a.log.Error("cannot configure the kernel path", "err", err)
		return
	}
	a.ctl.conf = key
}

// openTap starts the user path: the master's SYN tap and its loop.
func (a *Agent) openTap() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.master != nil {
		return
	}
	t, err := openTap(a.cfg.Iface, a.cfg.Addr.Addr(), a.cfg.Port)
	if err != nil {
		a.log.Error("cannot open the SYN tap", "err", err)
		return
	}
	a.master = t
	a.wg.Go(func() { a.masterLoop(t) })
}

func (a *Agent) closeTap() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.master != nil {
		a.master.close()
		a.master = nil
	}
}

// rankOf numbers the cluster's nodes by sorted ID: every node computes the
// same ranks from the same catalogue.
func rankOf(nodes []Node) map[string]int {
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		ids = append(ids, n.ID)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	r := make(map[string]int, len(ids))
	for i, id := range ids[:min(len(ids), maxRanks)] {
		r[id] = i
	}
	return r
}

func seq(n int) []int {
	s := make([]int, min(n, maxRanks))
	for i := range s {
		s[i] = i
	}
	return s
}
