package files

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// resumer decides, on the holder of a write right, when to release it so
// that replication of the file resumes. The policy is a cluster setting
// (resume): "idle" (no write for resume.idle), "immediate" (after every
// write) or "reads" (the paper's: resume.reads distinct clients read the
// file at the holder since its last write).
type resumer struct {
	s    *Service
	kick chan struct{}
	// immediate caches whether the policy is "immediate", as the last
	// round read it (written asks at every write).
	immediate atomic.Bool

	mu   sync.Mutex
	held map[string]*heldFile
}

type heldFile struct {
	grant     uint64
	lastWrite time.Time
	readers   map[string]struct{}
	due       bool
	busy      int           // writes in progress under this right
	releasing chan struct{} // non-nil while a release is being applied
}

func newResumer(s *Service) *resumer {
	return &resumer{s: s, kick: make(chan struct{}, 1), held: map[string]*heldFile{}}
}

func (r *resumer) entry(path string, grant uint64) *heldFile {
	h := r.held[path]
	if h == nil || h.grant != grant {
		h = &heldFile{grant: grant, lastWrite: time.Now(), readers: map[string]struct{}{}}
		r.held[path] = h
	}
	return h
}

// written records a committed write by this node. Only the immediate
// policy makes a write due at once; the others wait for the loop's tick
// (a scan of every held right at every write cost a quarter of a
// one-node cluster's CPU under small writes).
func (r *resumer) written(path string, grant uint64) {
	r.mu.Lock()
	h := r.entry(path, grant)
	h.lastWrite = time.Now()
	clear(h.readers)
	r.mu.Unlock()
	if r.immediate.Load() {
		r.poke()
	}
}

// begin marks a write in progress under the right, so that it is not
// released under the writer's feet. It returns false, after waiting for
// it to finish, when a release of this grant was already on its way: the
// writer must then take the right again.
func (r *resumer) begin(ctx context.Context, path string, grant uint64) bool {
	r.mu.Lock()
	h := r.entry(path, grant)
	if done := h.releasing; done != nil {
		r.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
		}
		return false
	}
	h.busy++
	r.mu.Unlock()
	return true
}

// end closes what begin opened.
func (r *resumer) end(path string, grant uint64) {
	r.mu.Lock()
	if h := r.held[path]; h != nil && h.grant == grant && h.busy > 0 {
		h.busy--
	}
	r.mu.Unlock()
}

// read records a read served by this node as the holder.
func (r *resumer) read(path string, grant uint64, client string) {
	r.mu.Lock()
	h := r.entry(path, grant)
	_, seen := h.readers[client]
	h.readers[client] = struct{}{}
	n := len(h.readers)
	r.mu.Unlock()
	if seen {
		return // nothing new for the policy (the loop's round rereads it)
	}
	if cfg := r.s.config(); cfg.Resume == "reads" && n >= cfg.ResumeReads {
		r.poke()
	}
}

// releaseNow asks for an immediate release (a write right taken for a
// write that then failed).
func (r *resumer) releaseNow(path string, grant uint64) {
	r.mu.Lock()
	r.entry(path, grant).due = true
	r.mu.Unlock()
	r.poke()
}

func (r *resumer) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *resumer) loop(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastScan := time.Time{}
	for {
		sweep := time.Since(lastScan) > 5*time.Second
		if sweep {
			r.adoptHeld()
			lastScan = time.Now()
		}
		r.releaseDue(ctx, sweep)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-r.kick:
		}
	}
}

// adoptHeld picks up rights this node holds but has no record of (after a
// restart), treating them as just written.
func (r *resumer) adoptHeld() {
	self := r.s.self
	var mine []*meta.File
	r.s.fsm.Read(func(st *meta.State) {
		if _, suspended := st.Counts(); suspended == 0 {
			return
		}
		st.Walk(func(f *meta.File) bool {
			if f.Holder == self {
				mine = append(mine, f)
			}
			return true
		})
	})
	r.mu.Lock()
	for _, f := range mine {
		r.entry(f.Path, f.Grant)
	}
	r.mu.Unlock()
}

// releaseDue releases the rights that fall due. Only those are looked up
// in the catalogue (a right this node no longer holds is forgotten, not
// released), and every right with sweep: a lookup of every held right at
// every tick was 7% of a node's CPU under small writes (issue 16).
func (r *resumer) releaseDue(ctx context.Context, sweep bool) {
	cfg := r.s.config()
	r.immediate.Store(cfg.Resume == "immediate")
	now := time.Now()
	type job struct {
		path  string
		grant uint64
		h     *heldFile
	}
	var due []job
	r.mu.Lock()
	for p, h := range r.held {
		if h.releasing != nil {
			continue
		}
		isDue := h.busy == 0 && (h.due || cfg.Resume == "immediate" ||
			cfg.Resume == "idle" && now.Sub(h.lastWrite) >= cfg.ResumeIdle ||
			cfg.Resume == "reads" && len(h.readers) >= cfg.ResumeReads)
		if !isDue && !sweep {
			continue
		}
		if f := r.s.fsm.File(p); f == nil || f.Holder != r.s.self || f.Grant != h.grant {
			delete(r.held, p)
			continue
		}
		if isDue {
			h.releasing = make(chan struct{})
			due = append(due, job{p, h.grant, h})
		}
	}
	r.mu.Unlock()
	if len(due) == 0 {
		return
	}
	items := make([]meta.Item, len(due))
	for i, j := range due {
		items[i] = meta.Item{Path: j.path, Grant: j.grant}
	}
	released := r.releaseAll(ctx, items)
	r.mu.Lock()
	for i, j := range due {
		close(j.h.releasing)
		j.h.releasing = nil
		if released[i] && r.held[j.path] == j.h {
			delete(r.held, j.path)
		}
	}
	r.mu.Unlock()
}

// releaseAll releases the rights of items, in entries of up to
// meta.MaxItems (core v5), or one by one while a voter is older; it
// reports which were released (the others are tried again next round).
func (r *resumer) releaseAll(ctx context.Context, items []meta.Item) []bool {
	done := make([]bool, len(items))
	for lo := 0; lo < len(items); lo += meta.MaxItems {
		hi := min(lo+meta.MaxItems, len(items))
		if hi-lo > 1 {
			ok, err := r.releaseBatch(ctx, items[lo:hi])
			if !errors.Is(err, meta.ErrUnsupported) {
				for i := lo; i < hi; i++ {
					done[i] = ok
				}
				continue
			}
		}
		for i := lo; i < hi; i++ {
			done[i] = r.release(ctx, items[i].Path, items[i].Grant)
		}
	}
	return done
}

// releaseBatch applies one Releases entry. A failure other than a
// refusal by a voter older than core v5 (ErrUnsupported, the caller then
// releases one by one) leaves the rights to the next round.
func (r *resumer) releaseBatch(ctx context.Context, items []meta.Item) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := r.s.cl.Apply(cctx, meta.Command{Kind: meta.KindReleases, Node: r.s.self, Items: items})
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, meta.ErrUnsupported) {
			r.s.log.Warn("release write rights", "files", len(items), "err", err)
		}
		return false, err
	}
	r.s.metrics.releases.Add(float64(len(items)))
	return true, nil
}

// release applies the release of one right; false if it failed (it is
// tried again at the next round).
func (r *resumer) release(ctx context.Context, path string, grant uint64) bool {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := r.s.cl.Apply(cctx, meta.Command{Kind: meta.KindRelease, Path: path, Node: r.s.self, Grant: grant})
	if err != nil {
		if ctx.Err() == nil {
			r.s.log.Warn("release write right", "path", path, "err", err)
		}
		return false
	}
	if res.Err != nil && !errors.Is(res.Err, meta.ErrNotHolder) {
		r.s.log.Warn("release write right", "path", path, "err", res.Err)
		return false
	}
	r.s.metrics.releases.Inc()
	return true
}
