package files

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/pause"
)

// protected remembers blobs written but not yet committed in the
// catalogue (a write in progress here, or a standby copy pushed to us), so
// that garbage collection does not remove them under the writer. A blob
// written here stays protected after its commit until this node has
// applied the commit (committed): garbage collection may hold a view of
// the path from before it (TestLitmus's COPY then MOVE met "no valid
// copy"), and once the commit is applied the catalogue decides.
type protected struct {
	mu    sync.Mutex
	m     map[string]protection // path + "\x00" + id
	swept time.Time             // expired entries were last removed
}

// protection is one blob's: until a time, or until this node has applied
// index (0: no such end).
type protection struct {
	until time.Time
	index uint64
}

func (p *protected) add(path, id string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]protection{}
	}
	p.m[path+"\x00"+id] = protection{until: time.Now().Add(d)}
}

// done ends the protection of a blob before its time (its fetch has
// been reported: the catalogue decides about it from now on).
func (p *protected) done(path, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, path+"\x00"+id)
}

// committed ends the protection of a blob once this node has applied
// index, the entry that committed it (at its time if that comes first).
func (p *protected) committed(path, id string, index uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := path + "\x00" + id
	if e, ok := p.m[k]; ok {
		e.index = index
		p.m[k] = e
	}
}

// keep returns the IDs among ids that are protected for path, but
// current (the current version's blob, "" for none: kept anyway), and
// the latest end of their protection. applied is the index this node had
// applied before the record that current comes from was read (0: none
// known; a protection until an index then lasts until its time).
func (p *protected) keep(path string, ids []string, current string, applied uint64) (kept []string, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	// Expired entries go once a second, not at every call: keep runs
	// for every written path, and the map holds every write of the last
	// two write timeouts (a sweep per call cost 12% of the CPU of a
	// node taking a thousand writes per second).
	if now.Sub(p.swept) > time.Second {
		p.swept = now
		for k, e := range p.m {
			if now.After(e.until) {
				delete(p.m, k)
			}
		}
	}
	for _, id := range ids {
		if id == current {
			continue
		}
		k := path + "\x00" + id
		e, ok := p.m[k]
		if !ok || now.After(e.until) {
			continue
		}
		if e.index != 0 && applied >= e.index {
			delete(p.m, k) // committed, and the record read after shows it
			continue
		}
		kept = append(kept, id)
		if e.until.After(until) {
			until = e.until
		}
	}
	return kept, until
}

// replicateLoop is the resumption worker: it brings this node's replicas up
// to date with the catalogue (fetching versions it should hold, once their
// write right is released) and removes blobs no version needs.
func (s *Service) replicateLoop(ctx context.Context) {
	pending := map[string]time.Time{} // path → not before
	// path → when to collect it again: blobs no version needs were kept
	// because they were protected (a path deleted while a standby copy's
	// protection lasts); without another look they would stay until the
	// path changes again
	later := map[string]time.Time{}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	sem := make(chan struct{}, s.cfg.Fetchers)
	// A fetch frees its slot once the blob is here; its report then waits
	// for a batch (replbatch.go) in one of these slots. Bounded, so that
	// fetches pause rather than pile up while the leader cannot be reached.
	reporting := make(chan struct{}, 4*meta.MaxItems)
	var mu sync.Mutex
	inflight := map[string]bool{}
	var wg sync.WaitGroup
	defer wg.Wait()
	first := true
	for {
		round := time.Now()
		changed := s.fsm.Changed()
		paths, rescan := s.fsm.DrainChanges()
		if rescan || first {
			first = false
			s.fsm.Read(func(st *meta.State) {
				st.Walk(func(f *meta.File) bool { pending[f.Path] = time.Time{}; return true })
			})
		}
		for _, p := range paths {
			pending[p] = time.Time{}
		}
		for _, p := range s.hot.takeFresh() {
			pending[p] = time.Time{}
		}
		cfg := s.config()
		s.throttle.setRate(cfg.ReplicationRate)
		s.metrics.replicationRate.Set(float64(cfg.ReplicationRate))
		now := time.Now()
		for p, at := range later {
			if !now.Before(at) {
				delete(later, p)
				if _, ok := pending[p]; !ok {
					pending[p] = time.Time{}
				}
			}
		}
		backlog := 0
		var wants []fetchJob
		for p, notBefore := range pending {
			mu.Lock()
			busy := inflight[p]
			mu.Unlock()
			if busy {
				backlog++
				continue
			}
			if now.Before(notBefore) {
				backlog++
				continue
			}
			f := s.fsm.File(p)
			source, fetch := s.plan(f, cfg)
			if !fetch {
				// Collect only on a view known to be current (the lease
				// requires having caught up with the leader), the record
				// read after: a node that has just restarted replays its
				// raft log, and its view may predate versions whose blobs
				// are here (the newest, maybe the only copy).
				if !s.cl.HasReadLease() {
					continue
				}
				applied := s.fsm.Applied() // before the record: see protected
				if again := s.collect(s.fsm.File(p), applied); !again.IsZero() {
					later[p] = again
				} else {
					delete(later, p)
				}
				delete(pending, p)
				continue
			}
			backlog++
			wants = append(wants, fetchJob{source: source, files: []*meta.File{f}})
		}
		// Small copies from one source go in one batch fetch (fetchbatch.go).
	jobs:
		for _, job := range fetchJobs(wants) {
			select {
			case sem <- struct{}{}:
			default:
				break jobs // all fetchers busy; next round
			}
			for _, f := range job.files {
				mu.Lock()
				inflight[f.Path] = true
				mu.Unlock()
				pending[f.Path] = now.Add(time.Second) // re-check after the fetch
			}
			wg.Add(1)
			go func(job fetchJob) {
				defer wg.Done()
				reports := 0
				errs := s.resumeReplicas(ctx, job, func() {
					for range job.files {
						select {
						case reporting <- struct{}{}:
							reports++
						case <-ctx.Done():
						}
					}
					<-sem
				})
				for range reports {
					<-reporting
				}
				mu.Lock()
				for _, f := range job.files {
					delete(inflight, f.Path)
				}
				mu.Unlock()
				for i, err := range errs {
					if err != nil && ctx.Err() == nil {
						s.log.Warn("resume replica", "path", job.files[i].Path, "from", job.source, "err", err)
					}
				}
			}(job)
		}
		s.metrics.backlog.Set(float64(backlog))
		s.backlog.Store(int64(backlog))
		select {
		case <-ctx.Done():
			return
		case <-changed:
			// Under a stream of writes every applied entry is a change:
			// the next round waits out roundGap, so that one round looks
			// at the paths of the entries applied meanwhile together.
			if pause.Until(ctx, round.Add(roundGap)) != nil {
				return
			}
		case <-tick.C:
		}
	}
}

// roundGap is the least time between two rounds of the replication worker
// woken by changes: a round parses the settings and looks at every path
// pending, and ran at every applied entry on every node (a thousand times
// a second under small writes). Small beside resume.idle's grain (1 s)
// and the resumer's tick (100 ms).
const roundGap = 20 * time.Millisecond

// plan decides whether this node must fetch f, and from whom.
func (s *Service) plan(f *meta.File, cfg meta.Config) (source string, fetch bool) {
	if f == nil || !f.Exists() || f.Suspended() || f.IsValidOn(s.self) || len(f.Valid) == 0 {
		return "", false
	}
	var targets []string
	s.fsm.Read(func(st *meta.State) { targets = st.Targets(f, cfg.Replicas) })
	mine := slices.Contains(targets, s.self) || s.hot.wants(f.Path)
	if !mine {
		return "", false
	}
	source = s.pickReplica(f)
	return source, source != ""
}

// resumeReplica makes this node's copy of f valid: fetch (unless the blob
// is already here, e.g. as a standby copy) and report it to the catalogue.
// fetched, if not nil, is called once the blob is here (or the fetch
// failed), before the report: the worker's fetch slot is free while the
// report waits for its batch. ctx is the replication worker's.
func (s *Service) resumeReplica(ctx context.Context, f *meta.File, source string, fetched func()) error {
	s.protect.add(f.Path, f.BlobID, 10*time.Minute)
	defer s.protect.done(f.Path, f.BlobID)
	err := s.fetchReplica(ctx, f, source)
	if fetched != nil {
		fetched()
	}
	if err != nil {
		return err
	}
	return s.reportResumed(ctx, f)
}

// reportResumed reports f's blob, now here, to the catalogue.
func (s *Service) reportResumed(ctx context.Context, f *meta.File) error {
	accepted, err := s.reportReplica(ctx, f)
	if err != nil {
		return err
	}
	if accepted {
		s.metrics.resumed.Inc()
		if s.hot.wants(f.Path) && !f.IsValidOn(s.self) {
			s.hot.added.Add(1)
			s.metrics.hotAdded.Inc()
		}
	}
	return nil // a stale version is not an error: the next round sees the new one
}

// fetchReplica brings f's blob here unless it is here already.
func (s *Service) fetchReplica(ctx context.Context, f *meta.File, source string) error {
	if info, err := s.st.Stat(f.Path, f.BlobID); err == nil && info.Sum == f.Sum.String() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	return s.fetchBlob(ctx, source, f)
}

// collect removes local blobs of f's path that no current version needs.
// It runs at every change of every path, so it lists the blobs' names
// only (no sidecar read) and stops there in the usual case: the current
// version's blob alone. It returns when to look again (zero: no need):
// once the protection of blobs it kept only for that ends. applied is
// the index this node had applied before f was read.
func (s *Service) collect(f *meta.File, applied uint64) (again time.Time) {
	if f == nil {
		return time.Time{}
	}
	ids, err := s.st.IDs(f.Path)
	if err != nil || len(ids) == 0 {
		return time.Time{}
	}
	if len(ids) == 1 && f.Exists() && ids[0] == f.BlobID {
		return time.Time{}
	}
	current := ""
	if f.Exists() {
		current = f.BlobID
	}
	keep, again := s.protect.keep(f.Path, ids, current, applied)
	if current != "" {
		keep = append(keep, current)
	}
	// Only the blobs listed and judged here go: one written since the
	// listing (a write to the path under way) was not judged, and is
	// protected (TestLitmus's MOVE over a path just deleted met "no valid
	// copy" once the deleted version's blob was no longer protected).
	doomed := slices.DeleteFunc(ids, func(id string) bool { return slices.Contains(keep, id) })
	if len(doomed) == 0 {
		return again
	}
	if err := s.st.Remove(f.Path, doomed...); err != nil {
		s.log.Warn("collect old versions", "path", f.Path, "err", err)
	}
	return again
}

// Backlog is the number of files this node still has to resume.
func (s *Service) Backlog() int { return int(s.backlog.Load()) }
