package node

import (
	"context"
	"math"
	"time"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/cache/proxy"
	"github.com/mure-dev/mure/internal/history"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/sessions"
)

// probeFresh is how long the relay-latency probe's latest result stands
// for the seconds after it (the probe runs every 5 s by default).
const probeFresh = 11 * time.Second

// readCache adds the caching proxy's figures to r: its running totals
// (requests by result, bytes by source, origin fetches) and the share of
// the requests since the previous reading that the cache answered (hit,
// stale, collapsed), unknown when there were none.
func (m *monitorReader) readCache(r *history.Reading) {
	if m.n.proxy == nil {
		return
	}
	st, ok := m.n.proxy.Status().(proxy.Status)
	if !ok {
		return
	}
	c := st.Counts
	r.V[history.CacheHit] = float64(c.Requests["hit"])
	r.V[history.CacheMiss] = float64(c.Requests["miss"])
	r.V[history.CacheStale] = float64(c.Requests["stale"])
	r.V[history.CacheBypass] = float64(c.Requests["bypass"])
	r.V[history.CacheMem] = float64(c.CacheMemory)
	r.V[history.CacheDisk] = float64(c.CacheDisk)
	r.V[history.CacheOrigin] = float64(c.Bytes["origin"])
	r.V[history.CacheFetches] = float64(c.OriginFetches)
	if p := st.Probe; p != nil && time.Since(p.At) < probeFresh {
		if p.CacheError == "" {
			r.V[history.ProbeCache] = p.CacheSecs * 1000
		}
		if p.OriginError == "" {
			r.V[history.ProbeOrigin] = p.OriginSecs * 1000
		}
	}

	var all int64
	for _, n := range c.Requests {
		all += n
	}
	cached := c.Requests["hit"] + c.Requests["stale"] + c.Requests["collapsed"]
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := all - m.prevCacheAll; m.hasCache && d > 0 && cached >= m.prevCached {
		r.V[history.CacheHitRatio] = float64(cached-m.prevCached) / float64(d)
	} else {
		r.V[history.CacheHitRatio] = math.NaN()
	}
	m.prevCacheAll, m.prevCached, m.hasCache = all, cached, true
}

// readSessions adds the node's persistent sessions, running and lost, as
// the cluster's records say.
func (m *monitorReader) readSessions(r *history.Reading) {
	var running, lost int
	for _, s := range sessions.Read(m.n.cl.FSM()) {
		if s.Node != m.n.ID() {
			continue
		}
		switch s.State {
		case sessions.StateRunning:
			running++
		case sessions.StateLost:
			lost++
		}
	}
	r.V[history.SessionsRunning], r.V[history.SessionsLost] = float64(running), float64(lost)
}

// monitorSessions lists the sessions a dashboard user may see, as GET
// /sessions decides: a user its own, an admin every user's. Without a
// user (the dashboard open, authentication off) there are none: sessions
// need a user to run as.
func (n *Node) monitorSessions(ctx context.Context, user string) any {
	if user == "" || n.sessions == nil {
		return []any{}
	}
	// A session of "admin" without the user's record is the static
	// token's (a deleted user's sessions end at their next request).
	admin := user == AdminUser
	n.cl.FSM().ReadPart(auth.NS, func(mp meta.Part) {
		if u := mp.(*auth.Part).User(user); u != nil {
			admin = u.Admin
		}
	})
	return n.sessions.List(ctx, user, admin)
}
