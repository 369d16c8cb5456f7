package files

import (
	"cmp"
	"context"
	"errors"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/meta"
)

// Hot files gain replicas (docs/decisions/0039-hot-replicas.md). Each
// node counts, per window (hot.window), the reads of each file that it
// sends to another node for want of a valid copy of its own, and the
// local reads of the hot copies it holds, and gossips its busiest files.
// A file read more than hot.reads times per second through the nodes
// without a copy becomes wanted by the busiest of them: the replication
// worker fetches it like a replica that node should hold (same fetchers,
// same replication.rate throttle) and reports it with the usual Replica
// command. A wanted file read less than half as often for hot.cool is
// dropped with a conditional Drop (Keep: the replication count), after
// this node stopped serving it locally.

// maxHotCounted bounds the paths counted per window (memory under a scan
// of many files: paths beyond it are not counted in that window).
const maxHotCounted = 100_000

// hotCopy is a file this node wants a hot copy of.
type hotCopy struct {
	cold time.Duration // read below half the threshold for the last cold
}

// hot is a node's bookkeeping of hot files; the hot loop owns the
// decisions, Open counts reads and asks whether a copy is retiring. A
// read takes no exclusive lock once its path is counted in the window:
// every read of the node goes through here.
type hot struct {
	enabled atomic.Bool
	nretire atomic.Int64 // len(retiring)
	// wantedSet is wanted's keys, replaced on change, for the reads.
	wantedSet atomic.Pointer[map[string]bool]

	cmu    sync.RWMutex
	counts map[string]*atomic.Int64 // reads in this window

	mu       sync.Mutex
	wanted   map[string]*hotCopy // files this node keeps (or fetches) a hot copy of
	fresh    []string            // wanted since the replication worker last looked
	retiring map[string]bool     // files whose hot copy is being dropped: not served here
	redrop   map[string]bool     // retiring files whose drop is to be tried again

	added, dropped atomic.Uint64
}

func newHot() *hot {
	return &hot{counts: map[string]*atomic.Int64{}, wanted: map[string]*hotCopy{}, retiring: map[string]bool{}, redrop: map[string]bool{}}
}

// read counts a read of path at this node: local says a local copy
// served it (counted only for wanted files, whose cooling it measures).
func (h *hot) read(path string, local bool) {
	if !h.enabled.Load() || local && !h.wants(path) {
		return
	}
	h.cmu.RLock()
	c := h.counts[path]
	h.cmu.RUnlock()
	if c == nil {
		h.cmu.Lock()
		if c = h.counts[path]; c == nil && len(h.counts) < maxHotCounted {
			c = new(atomic.Int64)
			h.counts[path] = c
		}
		h.cmu.Unlock()
	}
	if c != nil {
		c.Add(1)
	}
}

// wants reports whether this node wants a hot copy of path.
func (h *hot) wants(path string) bool {
	m := h.wantedSet.Load()
	return m != nil && (*m)[path]
}

// publishWanted refreshes wantedSet; under mu.
func (h *hot) publishWanted() {
	m := make(map[string]bool, len(h.wanted))
	for p := range h.wanted {
		m[p] = true
	}
	h.wantedSet.Store(&m)
}

// isRetiring reports whether path's hot copy here is being dropped (Open
// then reads it elsewhere).
func (h *hot) isRetiring(path string) bool {
	if h.nretire.Load() == 0 {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.retiring[path]
}

// takeFresh returns the paths wanted since the last call.
func (h *hot) takeFresh() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.fresh
	h.fresh = nil
	return out
}

// swap returns this window's counts and starts the next window.
func (h *hot) swap() map[string]int {
	h.cmu.Lock()
	counts := h.counts
	h.counts = map[string]*atomic.Int64{}
	h.cmu.Unlock()
	out := make(map[string]int, len(counts))
	for p, c := range counts {
		out[p] = int(c.Load())
	}
	return out
}

func (h *hot) want(path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wanted[path] = &hotCopy{}
	h.fresh = append(h.fresh, path)
	h.publishWanted()
}

func (h *hot) forget(path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.wanted, path)
	h.publishWanted()
}

func (h *hot) retire(path string, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if on {
		h.retiring[path] = true
	} else {
		delete(h.retiring, path)
	}
	h.nretire.Store(int64(len(h.retiring)))
}

// ReadAnswered counts a read of path that a face answered from the local
// reader of a Probe open (OpenOptions.Probe).
func (s *Service) ReadAnswered(path string) { s.hot.read(path, true) }

// HotStatus is what a node shows of its hot copies (files status).
type HotStatus struct {
	// Held: hot copies valid here now; Added and Dropped: since the start.
	Held    int    `json:"held"`
	Added   uint64 `json:"added"`
	Dropped uint64 `json:"dropped"`
}

// Hot returns this node's hot copies.
func (s *Service) Hot() HotStatus {
	return HotStatus{Held: s.hotHeld(), Added: s.hot.added.Load(), Dropped: s.hot.dropped.Load()}
}

// hotHeld counts the wanted files valid on this node.
func (s *Service) hotHeld() int {
	s.hot.mu.Lock()
	paths := make([]string, 0, len(s.hot.wanted))
	for p := range s.hot.wanted {
		paths = append(paths, p)
	}
	s.hot.mu.Unlock()
	n := 0
	for _, p := range paths {
		if f := s.fsm.File(p); f.Exists() && f.IsValidOn(s.self) {
			n++
		}
	}
	return n
}

// hotLoop runs the hot-file decisions once per window. It looks at the
// settings every tenth of a second, so that a change (hot replicas turned
// on, a shorter window) takes effect at once, not after a long window.
func (s *Service) hotLoop(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cfg := s.config()
		s.hot.enabled.Store(cfg.Replicas > 0 && cfg.HotReads > 0)
		elapsed := time.Since(start)
		if elapsed < cmp.Or(cfg.HotWindow, 10*time.Second) {
			continue
		}
		start = time.Now()
		s.hotRound(ctx, cfg, s.hot.swap(), elapsed)
		s.metrics.hotHeld.Set(float64(s.hotHeld()))
	}
}

// hotRound gossips this node's busiest files read elsewhere, drops the
// wanted files that cooled and wants the new ones it is the busiest
// reader of, the most read first, within the budget.
func (s *Service) hotRound(ctx context.Context, cfg meta.Config, counts map[string]int, window time.Duration) {
	rates := make(map[string]float64, len(counts))
	for p, n := range counts {
		rates[p] = float64(n) / window.Seconds()
	}
	s.publishHot(rates)
	d := s.hotDemand(rates)
	off := cfg.Replicas == 0 || cfg.HotReads == 0
	s.hot.mu.Lock()
	if cfg.Replicas == 0 {
		// Every node keeps a copy of every file now: the hot copies are
		// configured ones, to keep.
		clear(s.hot.wanted)
		s.hot.publishWanted()
	}
	var cold []string
	for p, c := range s.hot.wanted {
		switch total, _ := d.of(p); {
		case off:
			cold = append(cold, p)
		case total >= float64(cfg.HotReads)/2:
			c.cold = 0
		default:
			if c.cold += window; c.cold >= cfg.HotCool {
				cold = append(cold, p)
			}
		}
	}
	budget := cfg.HotMax - len(s.hot.wanted) + len(cold)
	for p := range s.hot.redrop {
		cold = append(cold, p)
	}
	clear(s.hot.redrop)
	s.hot.mu.Unlock()
	for _, p := range cold {
		s.dropHot(ctx, p, cfg.Replicas)
	}
	if off || budget <= 0 {
		return
	}
	totals := map[string]float64{}
	for p := range rates {
		if total, busiest := d.of(p); total > float64(cfg.HotReads) && busiest && !s.hot.wants(p) {
			totals[p] = total
		}
	}
	hotter := slices.SortedFunc(maps.Keys(totals), func(a, b string) int { return cmp.Or(cmp.Compare(totals[b], totals[a]), cmp.Compare(a, b)) })
	for _, p := range hotter {
		if budget == 0 {
			break
		}
		if s.mayWantHot(p, cfg.Replicas) {
			s.hot.want(p)
			budget--
			s.log.Info("hot file: fetching a copy", "path", p, "reads_per_s", rates[p], "through_nodes_without_a_copy", totals[p])
		}
	}
}

// hotKey is the key gossip carries for path (cluster.HotRead).
func hotKey(path string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(path))
	return h.Sum32() & (1<<cluster.HotKeyBits - 1)
}

// publishHot gossips the files this node read most often elsewhere (for
// want of a valid copy) in the last window.
func (s *Service) publishHot(rates map[string]float64) {
	var top []string
	for p, r := range rates {
		if f := s.fsm.File(p); r > 0 && !(f.Exists() && f.IsValidOn(s.self)) {
			top = append(top, p)
		}
	}
	slices.SortFunc(top, func(a, b string) int { return cmp.Or(cmp.Compare(rates[b], rates[a]), cmp.Compare(a, b)) })
	hs := make([]cluster.HotRead, 0, cluster.MaxHotReads)
	for _, p := range top[:min(len(top), cluster.MaxHotReads)] {
		hs = append(hs, cluster.HotRead{Key: hotKey(p), PerSecond: int(math.Round(rates[p]))})
	}
	s.cl.SetHotReads(hs)
}

// hotDemand is what a round knows of the reads of files: this node's
// own rates and what the other active nodes seen alive gossip.
type hotDemand struct {
	s     *Service
	rates map[string]float64
	peers map[string][]cluster.HotRead
}

func (s *Service) hotDemand(rates map[string]float64) hotDemand {
	d := hotDemand{s: s, rates: rates, peers: map[string][]cluster.HotRead{}}
	var ids []string
	s.fsm.Read(func(st *meta.State) { ids = st.ActiveNodes() })
	for _, id := range ids {
		if id != s.self && s.cl.Alive(id) {
			if hs := s.cl.HotReads(id); len(hs) > 0 {
				d.peers[id] = hs
			}
		}
	}
	return d
}

// of returns path's reads per second through this node and the nodes
// without a valid copy of it, and whether this node is the busiest of
// them (the most reads; the lower node ID among equals).
func (d hotDemand) of(path string) (total float64, busiest bool) {
	f := d.s.fsm.File(path)
	mine := d.rates[path]
	total, busiest = mine, true
	key := hotKey(path)
	for id, hs := range d.peers {
		if f.Exists() && f.IsValidOn(id) {
			continue // its reads are local there
		}
		for _, h := range hs {
			if h.Key != key {
				continue
			}
			total += float64(h.PerSecond)
			if r := int(math.Round(mine)); h.PerSecond > r || h.PerSecond == r && id < d.s.self {
				busiest = false
			}
		}
	}
	return total, busiest
}

// mayWantHot reports whether this node may take a hot copy of path: a
// file without a valid copy here that has its configured count of copies
// already — so that the hot copy is an extra that can be dropped again,
// not one the file needs. A suspended file may be wanted: the copy is
// fetched once its right is released, like any replica.
func (s *Service) mayWantHot(path string, replicas int) bool {
	ok := false
	s.fsm.Read(func(st *meta.State) {
		f := st.File(path)
		if n := st.Node(s.self); f == nil || !f.Exists() || f.IsValidOn(s.self) || n == nil || n.State != meta.NodeActive {
			return
		}
		have := 0
		for _, id := range f.Valid {
			if n := st.Node(id); n != nil && n.State == meta.NodeActive {
				have++
			}
		}
		ok = have >= replicas
	})
	return ok
}

// dropHot stops wanting path and, when its copy here is valid, drops it:
// this node stops serving the copy first (once the catalogue forgets it,
// no write fences this node for it, and a view of the catalogue that
// lags could still take it for valid), then the catalogue removes it
// from the valid set unless that would leave fewer than replicas copies
// (meta.ErrKeep: the copy has become one the file needs, and stays). The
// copy is served again only once that is settled; until then the next
// round tries again.
func (s *Service) dropHot(ctx context.Context, path string, replicas int) {
	s.hot.forget(path)
	f := s.fsm.File(path)
	if !f.Exists() || !f.IsValidOn(s.self) {
		s.hot.retire(path, false) // this node's view serves nothing of it
		return
	}
	s.hot.retire(path, true)
	if s.proposeDrop(ctx, f, replicas) {
		s.hot.retire(path, false)
		return
	}
	s.hot.mu.Lock()
	s.hot.redrop[path] = true
	s.hot.mu.Unlock()
}

// proposeDrop drops this node's copy of f from the catalogue (Keep:
// replicas) and removes the blob. It reports whether the copy may be
// served again: the drop was refused (by the catalogue, or by a cluster
// without core v4), or this node has applied it.
func (s *Service) proposeDrop(ctx context.Context, f *meta.File, replicas int) bool {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	res, err := s.cl.Apply(ctx, meta.Command{Kind: meta.KindDrop, Path: f.Path, Version: f.Version, Node: s.self, Keep: max(replicas, 1)})
	switch {
	case errors.Is(err, meta.ErrUnsupported):
		// A voter's binary predates conditional drops (a rolling
		// upgrade): refused before the log, so the copy is still valid
		// here and fenced by writes, one of the file's copies from now on.
		s.log.Info("hot file cooled; its copy here is kept: conditional drops need core v4 on every voter", "path", f.Path)
		return true
	case err != nil:
		s.log.Warn("drop hot copy", "path", f.Path, "err", err)
		return false // maybe applied: not served until known
	case errors.Is(res.Err, meta.ErrKeep):
		s.log.Info("hot file cooled; its copy here is one of its configured copies now, kept", "path", f.Path)
		return true
	case res.Err != nil:
		return true // a newer version: the writer fenced this node
	}
	if err := s.fsm.WaitApplied(ctx, res.Index); err != nil {
		return false
	}
	s.hot.dropped.Add(1)
	s.metrics.hotDropped.Inc()
	s.log.Info("hot file cooled: copy dropped", "path", f.Path)
	if cur := s.fsm.File(f.Path); cur.Exists() && cur.BlobID == f.BlobID && cur.IsValidOn(s.self) || s.hot.wants(f.Path) {
		return true
	}
	if kept, _ := s.protect.keep(f.Path, []string{f.BlobID}, "", 0); len(kept) == 0 {
		if err := s.st.Remove(f.Path, f.BlobID); err != nil {
			s.log.Warn("remove dropped hot copy", "path", f.Path, "err", err)
		}
	}
	return true
}
