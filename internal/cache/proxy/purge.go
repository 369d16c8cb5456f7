package proxy

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/cache/purge"
	"github.com/mure-dev/mure/internal/cache/tier"
)

// PurgeLog is where purges are recorded for the whole cluster: the
// replicated state's "cache" namespace (internal/cache/purge).
type PurgeLog interface {
	// Propose records a purge and returns once this node applied it.
	Propose(ctx context.Context, key string, prefix bool) error
	// Since returns the purges applied after seq, oldest first.
	Since(seq uint64) []purge.Record
	// CatchUp waits until this node has applied every purge the cluster
	// had recorded when it was called.
	CatchUp(ctx context.Context) error
}

// purgeRoute is the client API's purge endpoint (admin only).
const purgeRoute = "/cache/purge"

// purgeSet matches objects against many purge records in one pass.
type purgeSet struct {
	exact    map[string]time.Time
	prefixes []purge.Record
}

func newPurgeSet(recs []purge.Record) purgeSet {
	s := purgeSet{exact: map[string]time.Time{}}
	for _, r := range recs {
		if r.Prefix {
			s.prefixes = append(s.prefixes, r)
		} else if r.Time.After(s.exact[r.Key]) {
			s.exact[r.Key] = r.Time
		}
	}
	return s
}

func (s purgeSet) matches(m *tier.Meta) bool {
	if t, ok := s.exact[m.Key]; ok && m.ResponseTime.Before(t) {
		return true
	}
	for _, r := range s.prefixes {
		if r.Matches(m.Key, m.ResponseTime) {
			return true
		}
	}
	return false
}

// purges applies the cluster's purge records to this node's tiers. Until
// this node has caught up with the cluster's records once, an object it
// stored before it started (found on disk) may have been purged while it
// was away: such objects are not served (unpurged) until then.
type purges struct {
	log     PurgeLog
	started time.Time
	current atomic.Bool
	mu      sync.Mutex
	seen    uint64
}

// unpurged reports whether m may still be purged by records this node
// has not applied: stored before it started, and not caught up yet.
func (p *purges) unpurged(m *tier.Meta) bool {
	return p != nil && !p.current.Load() && m.ResponseTime.Before(p.started)
}

// catchUpCluster waits (at most 5 s) for the cluster's records, applies
// them, and from then on serves what it stored before it started.
func (p *purges) catchUpCluster(ctx context.Context, tiers *tier.Tiers) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := p.log.CatchUp(ctx); err != nil {
		return 0
	}
	n := p.catchUp(tiers)
	p.current.Store(true)
	return n
}

// catchUp removes what the records applied since the last call purge,
// and returns how many objects it removed.
func (p *purges) catchUp(tiers *tier.Tiers) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	recs := p.log.Since(p.seen)
	if len(recs) == 0 {
		return 0
	}
	p.seen = recs[len(recs)-1].Seq
	set := newPurgeSet(recs)
	return tiers.RemoveIf(set.matches)
}

// followPurges applies new purge records every period until the handler
// closes.
func (h *Handler) followPurges(period time.Duration) {
	if h.purges == nil {
		return
	}
	h.bg.Add(1)
	go func() {
		defer h.bg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			var n int
			if h.purges.current.Load() {
				n = h.purges.catchUp(h.tiers)
			} else {
				n = h.purges.catchUpCluster(h.bgCtx, h.tiers)
			}
			if n > 0 {
				h.log.Info("cache: purged objects", "objects", n)
			}
			select {
			case <-h.bgCtx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// purgeResult is the purge endpoint's answer.
type purgeResult struct {
	Key      string `json:"key"`
	Prefix   bool   `json:"prefix"`
	Removed  int    `json:"removed_here"`
	Recorded bool   `json:"recorded"`
}

// ServePurge handles POST /cache/purge?url=URL[&prefix=1]: URL is the
// object's URL as clients ask for it (http://host/path), or a path of the
// default origin. The purge is recorded in the cluster, then applied here
// and sent to the other nodes at once.
func (h *Handler) ServePurge(w http.ResponseWriter, r *http.Request) {
	raw := r.URL.Query().Get("url")
	prefix := r.URL.Query().Get("prefix") == "1" || r.URL.Query().Get("prefix") == "true"
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Host == "" && !strings.HasPrefix(u.Path, "/")) {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "purge needs url=http://HOST/PATH or url=/PATH (the default origin), and prefix=1 for everything under it")
		return
	}
	host := u.Host
	if host == "" {
		host = "localhost"
	}
	o := h.router.route(host, u.Path)
	if o == nil {
		api.Error(w, http.StatusNotFound, api.CodeNotFound, "no origin of this proxy serves "+raw)
		return
	}
	key := o.name() + " " + u.RequestURI()
	if prefix {
		key = o.name() + " " + u.EscapedPath()
	}
	res := purgeResult{Key: key, Prefix: prefix}
	if h.purges != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if err := h.purges.log.Propose(ctx, key, prefix); err != nil {
			api.Unavailable(w, 1, api.CodeUnavailable, "the purge could not be recorded in the cluster (no quorum?): "+err.Error())
			return
		}
		res.Recorded = true
	}
	rm := removal{Keys: []string{key}}
	if prefix {
		rm = removal{Prefixes: []string{key}}
	}
	res.Removed = h.removeLocal(rm)
	h.broadcast(rm)
	api.JSON(w, http.StatusOK, res)
}
