package sessions

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mure-dev/mure/internal/sessions/holder"
)

// tickEvery is how often the manager looks at its holders and records.
const tickEvery = time.Second

// orphanAfter is how long a local holder may have no record before it is
// ended (a record is written before its holder starts, but a node
// catching up may not have applied it yet).
const orphanAfter = 30 * time.Second

// adoptGrace: a record says a session runs here but no holder does; after
// this long since Open the session counts as lost (a reboot took it).
const adoptGrace = 3 * time.Second

func (m *Manager) loop() {
	defer close(m.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-m.stop
		cancel()
	}()
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		m.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tick looks at every local holder (status, culling, records) and every
// record (lost nodes, restarts elsewhere).
func (m *Manager) tick(ctx context.Context) {
	recs := m.Records()
	byID := make(map[string]Session, len(recs))
	for _, r := range recs {
		byID[r.ID] = r
	}
	m.mu.Lock()
	locals := make([]*local, 0, len(m.local))
	for _, l := range m.local {
		locals = append(locals, l)
	}
	m.mu.Unlock()
	me := m.cl.NodeID()
	for _, l := range locals {
		if ctx.Err() != nil {
			return
		}
		m.checkLocal(ctx, l, byID)
	}
	for _, r := range recs {
		if r.Node != me || ctx.Err() != nil {
			continue
		}
		if _, ok := m.Dir(r.ID); ok || m.isStarting(r.ID) {
			continue
		}
		switch {
		case firstStart(r):
			// A first start that failed, or whose node stopped while
			// starting it: no program ever ran; nothing to show.
			m.log.Warn("removing the record of a session that did not start", "session", r.ID)
			m.unrecord(ctx, r.ID)
		case r.State == StateStarting:
			m.restartHere(ctx, r)
		case r.State == StateRunning && time.Since(m.opened) > adoptGrace:
			m.log.Warn("a session of this node has no holder: lost", "session", r.ID)
			_ = m.apply(ctx, SetOp(Move{ID: r.ID, Node: me, State: StateLost}))
		}
	}
	if m.cl.IsLeader() {
		m.watchNodes(ctx, recs)
	}
}

func (m *Manager) checkLocal(ctx context.Context, l *local, byID map[string]Session) {
	st, err := m.status(ctx, l.dir)
	if err != nil {
		if _, exited := holder.ReadExit(l.dir); exited || !holderAlive(l.dir) {
			m.log.Info("session ended", "session", l.id)
			m.ended(ctx, l.id)
		}
		return
	}
	m.mu.Lock()
	l.status = st
	m.mu.Unlock()
	me := m.cl.NodeID()
	rec, ok := byID[l.id]
	switch {
	case !ok:
		if l.missingSince.IsZero() {
			l.missingSince = time.Now()
		} else if time.Since(l.missingSince) > orphanAfter {
			m.log.Warn("ending a session that has no record", "session", l.id)
			m.killLocal(l.id, "it has no record in the cluster")
		}
		return
	case rec.Parent != "" && !hasParent(byID, rec):
		m.log.Info("ending a session whose parent ended", "session", l.id, "parent", rec.Parent)
		m.killLocal(l.id, "its parent session "+rec.Parent+" ended")
		return
	case rec.Node != me:
		m.log.Warn("ending a session that was restarted on another node", "session", l.id, "node", rec.Node)
		m.killLocal(l.id, "it was restarted on node "+rec.Node)
		return
	case rec.State != StateRunning:
		// Back from a restart or a partition: the holder kept it.
		_ = m.apply(ctx, SetOp(Move{ID: l.id, Node: me, State: StateRunning}))
	}
	l.missingSince = time.Time{}
	m.cull(l, st)
}

// hasParent reports whether rec's parent session is still recorded.
func hasParent(byID map[string]Session, rec Session) bool {
	_, ok := byID[rec.Parent]
	return ok
}

// cull ends a session idle for its kind's Idle, warning its clients first.
// Idle means no input, no output and no CPU use: a busy silent program is
// not idle.
func (m *Manager) cull(l *local, st holder.Status) {
	k := l.kind
	if k.Idle <= 0 {
		return
	}
	idle := time.Since(st.LastActive)
	switch {
	case idle >= k.Idle:
		m.log.Info("ending an idle session", "session", l.id, "idle", idle.Round(time.Second))
		m.killLocal(l.id, fmt.Sprintf("idle for %v", idle.Round(time.Second)))
	case idle >= k.warnAt() && !l.warned:
		l.warned = true
		m.notice(l.dir, fmt.Sprintf("mure: this session has been idle for %v and will be ended in %v unless it is used",
			idle.Round(time.Second), (k.Idle-idle).Round(time.Second)))
	case idle < k.warnAt():
		l.warned = false
	}
}

func (m *Manager) status(ctx context.Context, dir string) (holder.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := holder.Control(ctx, dir)
	if err != nil {
		return holder.Status{}, err
	}
	defer c.Close()
	return c.Status(ctx)
}

func (m *Manager) notice(dir, text string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if c, err := holder.Control(ctx, dir); err == nil {
		_ = c.Notice(text)
		_, _ = c.Status(ctx)
		c.Close()
	}
}

// watchNodes (on the leader) marks the sessions of nodes dead for
// LostAfter lost, or restarts them elsewhere when their kind says so.
func (m *Manager) watchNodes(ctx context.Context, recs []Session) {
	now := time.Now()
	var live []string
	dead := map[string]bool{}
	for _, r := range recs {
		if _, seen := dead[r.Node]; seen {
			continue
		}
		dead[r.Node] = !m.cl.Alive(r.Node)
	}
	m.mu.Lock()
	for n, d := range dead {
		if !d {
			delete(m.deadSince, n)
		} else if _, ok := m.deadSince[n]; !ok {
			m.deadSince[n] = now
		}
	}
	m.mu.Unlock()
	for _, r := range recs {
		if r.State == StateLost || !dead[r.Node] {
			continue
		}
		m.mu.Lock()
		since := m.deadSince[r.Node]
		m.mu.Unlock()
		if now.Sub(since) < m.cfg.LostAfter {
			continue
		}
		// A first start is not restarted elsewhere: its node died while
		// starting it, and the request that asked for it most likely
		// failed with it (the user may have asked again). Lost, it stays
		// visible until killed, and is running again if its node comes
		// back with the holder.
		k, ok := m.kinds[r.Kind]
		if ok && k.RestartElsewhere && !firstStart(r) {
			if live == nil {
				live = m.liveNodes(dead)
			}
			if n, err := m.cfg.Placer.Place(ctx, k, live); err == nil {
				m.log.Info("restarting a session elsewhere", "session", r.ID, "from", r.Node, "to", n)
				_ = m.apply(ctx, SetOp(Move{ID: r.ID, Node: n, State: StateStarting, Restarted: true}))
				continue
			}
		}
		m.log.Warn("session lost with its node", "session", r.ID, "node", r.Node)
		_ = m.apply(ctx, SetOp(Move{ID: r.ID, Node: r.Node, State: StateLost}))
	}
}

// liveNodes lists the nodes that may take a session: this one and the
// live nodes among those seen in records (the cluster's members are not
// part of the seam; a restart's target must run sessions anyway).
func (m *Manager) liveNodes(dead map[string]bool) []string {
	out := []string{m.cl.NodeID()}
	for n, d := range dead {
		if !d && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// restartHere starts a session the leader moved to this node.
func (m *Manager) restartHere(ctx context.Context, r Session) {
	k, ok := m.kinds[r.Kind]
	if !ok {
		m.log.Warn("cannot restart a session of a kind this node lacks", "session", r.ID, "kind", r.Kind)
		_ = m.apply(ctx, SetOp(Move{ID: r.ID, Node: r.Node, State: StateLost}))
		return
	}
	// The new credential is recorded before the program starts (see Start).
	token, hash := NewCredential(r.ID)
	if err := m.apply(ctx, SetOp(Move{ID: r.ID, Node: r.Node, State: StateStarting, CredentialHash: hash})); err != nil {
		m.log.Warn("cannot record a restarted session's credential; trying again", "session", r.ID, "err", err)
		return
	}
	if err := m.spawn(ctx, r, k, holder.Size{Cols: 80, Rows: 24}, token); err != nil {
		m.log.Warn("cannot restart a session here", "session", r.ID, "err", err)
		_ = m.apply(ctx, SetOp(Move{ID: r.ID, Node: r.Node, State: StateLost}))
		return
	}
	m.log.Info("session restarted here", "session", r.ID)
	_ = m.apply(ctx, SetOp(Move{ID: r.ID, Node: m.cl.NodeID(), State: StateRunning}))
}

// firstStart reports whether r is a new session's record written before
// its holder started (Start) and not yet marked running: no restart.
func firstStart(r Session) bool { return r.State == StateStarting && r.Restarts == 0 }
