package proxy

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/cache"
	"github.com/mure-dev/mure/internal/cache/tier"
)

// cacheName names this cache in Cache-Status.
const cacheName = "mure"

// Handler is the caching proxy's HTTP handler.
type Handler struct {
	router    *router
	policy    cache.Policy
	tiers     *tier.Tiers
	transport *http.Transport
	fresh     *http.Transport // second tries, never a reused connection
	flights   *flights
	metrics   *metrics
	log       *slog.Logger
	limits    Limits
	now       func() time.Time
	share     *Sharing // nil: this node's cache alone
	fills     budget
	purges    *purges // nil: purges are not recorded in a cluster
	relays    *relays // the bound on bypass (decision 0055)
	redirect  bool    // shed with a 307 to the origin, not a 503

	bgCtx  context.Context
	bgStop context.CancelFunc
	bg     sync.WaitGroup
}

// Limits bound what the proxy accepts from origins and how long misses
// wait for each other.
type Limits struct {
	// MaxObject is the largest body stored; larger ones are passed
	// through, not cached (0: 16 MiB).
	MaxObject int64
	// MaxHeaderBytes bounds an origin's response header (0: 64 KiB).
	MaxHeaderBytes int64
	// HeaderTimeout bounds the wait for an origin's response header, and
	// BodyTimeout the wait for each read of its body (0: 30 s each).
	HeaderTimeout, BodyTimeout time.Duration
	// CollapseWait bounds how long a miss waits for a concurrent fetch of
	// the same object (0: 10 s); CollapseMax bounds how many wait (0: 1024).
	CollapseWait time.Duration
	CollapseMax  int
	// FillMemory bounds the bytes of all bodies being read whole to be
	// stored at once (0: DefaultFillMemory of the memory tier): beyond it
	// a response is passed through uncached, so many large misses at once
	// cannot exhaust memory.
	FillMemory int64
}

// DefaultFillMemory is the fill budget for a memory tier of memory bytes:
// half of it, but room for one object of maxObject bytes, and at most
// 256 MiB. The copies being filled are held in the heap besides the
// memory tier, so their bound follows the memory given to the cache.
func DefaultFillMemory(memory, maxObject int64) int64 {
	return min(max(memory/2, maxObject), 256<<20)
}

// fill sets the defaults; memory is the memory tier's bound (0: 64 MiB).
func (l *Limits) fill(memory int64) {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.MaxObject <= 0 {
		l.MaxObject = 16 << 20
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 64 << 10
	}
	def(&l.HeaderTimeout, 30*time.Second)
	def(&l.BodyTimeout, 30*time.Second)
	def(&l.CollapseWait, 10*time.Second)
	if l.CollapseMax <= 0 {
		l.CollapseMax = 1024
	}
	if memory <= 0 {
		memory = 64 << 20
	}
	if l.FillMemory <= 0 {
		l.FillMemory = DefaultFillMemory(memory, l.MaxObject)
	}
}

// ServeHTTP routes a request to its origin, through the cache for GET and
// HEAD, straight (invalidating what it changes) for other methods.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.serve(w, r, false) }

// serve answers a request; owner is true when another node relayed it
// here as the key's owner (it is then never relayed again).
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, owner bool) {
	o := h.router.route(r.Host, r.URL.Path)
	if o == nil {
		h.metrics.result(resultRefused)
		api.Error(w, http.StatusMisdirectedRequest, api.CodeForbidden,
			"this proxy serves no origin for Host "+strconv.Quote(r.Host)+" (see --proxy-origin)")
		return
	}
	key := o.name() + " " + r.URL.RequestURI()
	switch {
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		h.forwardUnsafe(w, r, o)
	case r.Header.Get("Upgrade") != "":
		h.metrics.result(resultBypass)
		h.pass(w, r, o, cache.Status{Fwd: cache.FwdBypass})
	default:
		h.serveCacheable(w, r, o, key, owner)
	}
}

// lookup returns the stored variant that matches the request's Vary
// fields (the most recent), and whether the key had any variant at all.
func (h *Handler) lookup(key string, req http.Header) (*tier.Meta, bool) {
	vs := h.tiers.Variants(key)
	var best *tier.Meta
	for _, m := range vs {
		if m.Selected.Matches(m.Vary, req) && (best == nil || m.ResponseTime.After(best.ResponseTime)) {
			best = m
		}
	}
	return best, len(vs) > 0
}

func (h *Handler) serveCacheable(w http.ResponseWriter, r *http.Request, o *Origin, key string, owner bool) {
	meta, any := h.lookup(key, r.Header)
	if meta != nil && h.purges.unpurged(meta) {
		meta = nil // stored before this node started: perhaps purged since
	}
	var d cache.Decision
	if meta != nil {
		d = h.policy.Decide(r.Header, meta.Stored(), h.now())
	}
	if !owner && h.share != nil && (meta == nil || d.Action == cache.Validate) && !cache.OnlyIfCached(r.Header) {
		if p, self := h.share.Ring.Owner(key); !self && h.relay(w, r, p) == nil {
			return
		}
	}
	if meta != nil {
		obj, err := h.tiers.Get(meta)
		switch {
		case errors.Is(err, tier.ErrBusy) && !cache.OnlyIfCached(r.Header):
			h.overloaded(w, r, o)
			return
		case err != nil:
			// Evicted or corrupt since the lookup (or only-if-cached on
			// a busy disk): a miss.
		case d.Action == cache.Serve:
			h.metrics.result(resultHit)
			h.writeStored(w, r, obj, cache.Status{Hit: true, TTL: d.TTL(), HasTTL: true})
			return
		case d.Action == cache.ServeStale:
			h.metrics.result(resultStale)
			h.revalidateLater(r, o, key, obj)
			h.writeStored(w, r, obj, cache.Status{Hit: true, TTL: d.TTL(), HasTTL: true, Detail: "stale-while-revalidate"})
			return
		case cache.OnlyIfCached(r.Header):
			h.gatewayTimeout(w)
			return
		case r.Header.Get("Range") != "":
			// A range of a stale object: the origin answers it.
		default:
			h.validate(w, r, o, key, obj, d.Why)
			return
		}
	}
	if cache.OnlyIfCached(r.Header) {
		h.gatewayTimeout(w)
		return
	}
	if r.Header.Get("Range") != "" {
		// Ranges are answered from stored whole objects only; partial
		// responses are not stored.
		h.metrics.result(resultBypass)
		h.pass(w, r, o, cache.Status{Fwd: cache.FwdBypass, Detail: "range"})
		return
	}
	fwd := cache.FwdURIMiss
	if any {
		fwd = cache.FwdVaryMiss
	}
	if h.tiers.Busy() {
		// Past the disk's capacity a miss is kept in memory only: to this
		// node it is a relay like a disk-only request, under their bound.
		if !h.relays.enter() {
			h.shed(w, r, o)
			return
		}
		defer h.relays.leave()
	}
	if r.Method == http.MethodHead {
		h.metrics.result(resultMiss)
		h.pass(w, r, o, cache.Status{Fwd: fwd})
		return
	}
	h.miss(w, r, o, key, fwd)
}

// overloaded answers a request whose object is only on a busy disk: it
// goes to the origin as it came (its validators and range too) instead of
// queuing behind the disk, and nothing is stored (docs/cache.md, bypass).
// Past the bound on such relays, it is shed instead (decision 0055).
func (h *Handler) overloaded(w http.ResponseWriter, r *http.Request, o *Origin) {
	if !h.relays.enter() {
		h.shed(w, r, o)
		return
	}
	defer h.relays.leave()
	h.metrics.result(resultOverload)
	h.pass(w, r, o, cache.Status{Fwd: cache.FwdBypass, Detail: "overload"})
}

// miss fetches an object no variant of which answers: concurrent misses
// for the key wait for one fetch; if it was stored they are answered
// from the cache, else each goes to the origin.
func (h *Handler) miss(w http.ResponseWriter, r *http.Request, o *Origin, key, fwd string) {
	fl, leader, full := h.flights.join(key)
	switch {
	case full:
	case leader:
		stored := false
		defer func() { h.flights.finish(key, fl, stored) }()
		h.metrics.result(resultMiss)
		stored = h.fetch(w, r, o, key, cache.Status{Fwd: fwd})
		return
	default:
		h.metrics.collapsedWait()
		if fl.wait(r.Context(), h.limits.CollapseWait) {
			if meta, _ := h.lookup(key, r.Header); meta != nil {
				if obj, err := h.tiers.Get(meta); err == nil {
					h.metrics.result(resultCollapsed)
					d := h.policy.Decide(cache.Header{}, meta.Stored(), h.now())
					h.writeStored(w, r, obj, cache.Status{Hit: true, Collapsed: true, TTL: d.TTL(), HasTTL: true})
					return
				}
			}
		}
	}
	h.metrics.result(resultMiss)
	h.fetch(w, r, o, key, cache.Status{Fwd: fwd})
}

// writeStored answers from a stored object: its header with Age and
// Cache-Status, a 304 when the client's conditions match, no body for HEAD.
func (h *Handler) writeStored(w http.ResponseWriter, r *http.Request, obj *tier.Object, st cache.Status) {
	hdr := w.Header()
	for k, v := range obj.Header {
		hdr[k] = v
	}
	hdr.Set("Age", cache.AgeHeader(obj.Stored().Age(h.now())))
	hdr.Set("Cache-Status", st.String(cacheName))
	if obj.Status == http.StatusOK && cache.NotModified(r.Header, obj.Header) {
		for _, f := range []string{"Content-Length", "Content-Type", "Content-Encoding", "Content-Range", "Transfer-Encoding"} {
			hdr.Del(f)
		}
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if obj.Status == http.StatusOK && r.Header.Get("Range") != "" {
		// net/http answers the range (and If-Range) from the whole body.
		hdr.Del("Content-Length")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(obj.Body))
		return
	}
	hdr.Set("Content-Length", strconv.Itoa(len(obj.Body)))
	w.WriteHeader(obj.Status)
	if r.Method != http.MethodHead {
		n, _ := w.Write(obj.Body)
		h.metrics.served("cache", int64(n))
		h.metrics.servedTier(obj.FromDisk, int64(n))
	}
}

func (h *Handler) gatewayTimeout(w http.ResponseWriter) {
	h.metrics.result(resultMiss)
	w.Header().Set("Cache-Status", cache.Status{Fwd: cache.FwdMiss, Detail: "only-if-cached"}.String(cacheName))
	api.Error(w, http.StatusGatewayTimeout, api.CodeGatewayTimeout, "only-if-cached: the object is not in the cache")
}

// originError answers a failed origin fetch: 504 on a timeout, else 502.
func (h *Handler) originError(w http.ResponseWriter, err error) {
	h.metrics.result(resultError)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errBodyTimeout) {
		api.Error(w, http.StatusGatewayTimeout, api.CodeGatewayTimeout, "the origin did not answer in time: "+err.Error())
		return
	}
	api.Error(w, http.StatusBadGateway, api.CodeBadGateway, "the origin failed: "+err.Error())
}
