package files

import (
	"context"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// settleLoop, on the leader, settles versions left pending by a barrier
// that did not finish (the proposer gave up, or the leader changed): it
// fences every leased node again, then settles. A version is left alone
// for a second first, so as not to race the barrier of its own write.
func (s *Service) settleLoop(ctx context.Context) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	seen := map[string]time.Time{} // path@version → first seen pending
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !s.cl.IsLeader() {
			clear(seen)
			continue
		}
		var pending []*meta.File
		s.fsm.Read(func(st *meta.State) {
			if st.Pending() == 0 {
				return
			}
			st.Walk(func(f *meta.File) bool {
				if f.Pending {
					pending = append(pending, f)
				}
				return true
			})
		})
		now := time.Now()
		live := map[string]bool{}
		for _, f := range pending {
			key := f.Path + "@" + f.ETag()
			live[key] = true
			first, ok := seen[key]
			if !ok {
				seen[key] = now
				continue
			}
			if now.Sub(first) < time.Second {
				continue
			}
			if err := s.resettle(ctx, f); err != nil && ctx.Err() == nil {
				s.log.Warn("settle pending version", "path", f.Path, "version", f.Version, "err", err)
			}
		}
		for k := range seen {
			if !live[k] {
				delete(seen, k)
			}
		}
	}
}

func (s *Service) resettle(ctx context.Context, f *meta.File) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.cl.WaitInvalidationReady(ctx); err != nil {
		return err
	}
	return s.Barrier(ctx, &meta.Result{Index: f.Version, File: f, Invalidated: s.cl.LeasedExcept(nil)})
}

// awaitSettled waits, bounded by SettleWait, until path's current version
// is no longer pending, and returns its record.
func (s *Service) awaitSettled(ctx context.Context, path string) *meta.File {
	deadline := time.NewTimer(s.cfg.SettleWait)
	defer deadline.Stop()
	for {
		changed := s.fsm.Changed()
		f := s.fsm.File(path)
		if f == nil || !f.Pending {
			return f
		}
		select {
		case <-changed:
		case <-deadline.C:
			return f
		case <-ctx.Done():
			return f
		}
	}
}
