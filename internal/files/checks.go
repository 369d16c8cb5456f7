package files

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
)

// Checksums (see docs/reliability.md). The store checks a replica against
// its SHA-256 the first time it is opened after a start and in a
// background scrub, and moves a corrupt one to quarantine at once, so it
// is never served. The service then tells the catalogue that this node no
// longer holds the version (meta.KindDrop): reads are redirected to the
// other holders, and the replication worker, finding this node among the
// file's targets but not among its valid nodes, fetches a healthy copy.

// drops are the catalogue updates still to make: path → version whose
// copy here is lost, until the update is applied. A proposal that fails
// (no quorum) is retried.
type drops struct {
	mu   sync.Mutex
	m    map[string]uint64
	kick chan struct{} // capacity 1
}

// add queues a drop; false if it is already queued.
func (d *drops) add(path string, version uint64) bool {
	d.mu.Lock()
	if d.m == nil {
		d.m = map[string]uint64{}
	}
	queued := d.m[path] == version
	d.m[path] = version
	d.mu.Unlock()
	select {
	case d.kick <- struct{}{}:
	default:
	}
	return !queued
}

// pending returns a copy of the queue.
func (d *drops) pending() map[string]uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := make(map[string]uint64, len(d.m))
	for k, v := range d.m {
		m[k] = v
	}
	return m
}

// done removes a drop from the queue, unless a newer one replaced it.
func (d *drops) done(path string, version uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m[path] == version {
		delete(d.m, path)
	}
}

// lost records that this node's copy of f's current version failed a
// check (err wraps store.ErrChecksum; the store has quarantined it) or is
// missing although the catalogue counts it.
func (s *Service) lost(f *meta.File, err error) {
	if cur := s.fsm.File(f.Path); cur == nil || cur.Version != f.Version || !cur.IsValidOn(s.self) {
		return // nothing to undo in the catalogue (an old version, a standby copy, dropped already)
	}
	if s.drops.add(f.Path, f.Version) {
		s.log.Error("replica lost: reads go to other holders until it is repaired", "path", f.Path, "version", f.Version, "blob", f.BlobID, "err", err)
		s.metrics.lostReplicas.Inc()
	}
}

// missing reports whether f's blob is absent here although the catalogue
// counts this node valid, checked again on the latest record (a blob is
// always stored before the node is recorded valid, but an old record may
// name a version collected since).
func (s *Service) missing(f *meta.File) bool {
	cur := s.fsm.File(f.Path)
	if cur == nil || cur.Version != f.Version || !cur.IsValidOn(s.self) {
		return false
	}
	_, err := s.st.Stat(f.Path, f.BlobID)
	return errors.Is(err, store.ErrNotFound)
}

// dropLoop proposes the drops, retrying failed ones every second.
func (s *Service) dropLoop(ctx context.Context) {
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		for path, version := range s.drops.pending() {
			cctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
			res, err := s.cl.Apply(cctx, meta.Command{Kind: meta.KindDrop, Path: path, Version: version, Node: s.self})
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.Warn("drop a lost replica from the catalogue; will retry", "path", path, "err", err)
				continue
			}
			if res.Err == nil {
				s.metrics.dropped.Inc()
			}
			s.drops.done(path, version) // a stale version is not an error: the file changed since
		}
		select {
		case <-ctx.Done():
			return
		case <-s.drops.kick:
		case <-retry.C:
		}
	}
}

// scrubLoop runs the store's scrub, one pass every ScrubPeriod (a pass is
// spread over the period, within ScrubRate), then looks for replicas the
// catalogue counts here that the store no longer has.
func (s *Service) scrubLoop(ctx context.Context) {
	if s.cfg.ScrubPeriod < 0 {
		return
	}
	pace := store.ScrubPace{Period: s.cfg.ScrubPeriod, MaxRate: s.cfg.ScrubRate}
	for {
		start := time.Now()
		if _, err := s.st.Scrub(ctx, pace, s.scrubbed); err != nil && ctx.Err() == nil {
			s.log.Warn("scrub pass", "err", err)
		}
		s.findMissing(ctx)
		t := time.NewTimer(time.Until(start.Add(s.cfg.ScrubPeriod)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// scrubbed is called by the scrub for a blob found corrupt.
func (s *Service) scrubbed(info store.Info, err error) {
	s.log.Warn("scrub: corrupt blob quarantined", "path", info.Path, "blob", info.ID, "err", err)
	s.lostBlob(info.Path, info.ID, err)
}

// findMissing drops the replicas the catalogue counts here but the store
// does not hold (e.g. quarantined with an unreadable sidecar, which names
// no path).
func (s *Service) findMissing(ctx context.Context) {
	var mine []*meta.File
	s.fsm.Read(func(st *meta.State) {
		st.Walk(func(f *meta.File) bool {
			if f.Exists() && f.IsValidOn(s.self) {
				mine = append(mine, f)
			}
			return ctx.Err() == nil
		})
	})
	for _, f := range mine {
		if ctx.Err() != nil {
			return
		}
		if s.missing(f) {
			s.lost(f, store.ErrNotFound)
		}
	}
}
