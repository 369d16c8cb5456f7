package files

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// fence marks a path whose local copy was invalidated at raft index idx,
// before this node applied that index: the node must not serve the path
// from its own state until it has. Hint is a node holding the new state.
type fence struct {
	idx  uint64
	hint string
}

// fences is the set of pending invalidations of this node.
type fences struct {
	mu sync.Mutex
	m  map[string]fence
}

func (f *fences) add(path string, idx uint64, hint string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, ok := f.m[path]; !ok || cur.idx < idx {
		f.m[path] = fence{idx: idx, hint: hint}
	}
}

// check returns the pending fence of path, if this node has not yet
// applied it; fences already applied are dropped.
func (f *fences) check(path string, applied uint64) (fence, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fc, ok := f.m[path]
	if !ok {
		return fence{}, false
	}
	if applied >= fc.idx {
		delete(f.m, path)
		return fence{}, false
	}
	return fc, true
}

// Barrier runs on the leader after a command invalidated copies (see
// cluster.Config.Barrier): every node named in r.Invalidated that holds a
// read lease must either acknowledge the invalidation or let its lease
// expire before the writer is answered.
func (s *Service) Barrier(ctx context.Context, r *meta.Result) error {
	if r.File == nil {
		return nil
	}
	req := Invalidation{Path: r.File.Path, Index: r.Index, Hint: r.File.Holder}
	if req.Hint == "" && len(r.File.Valid) > 0 {
		req.Hint = r.File.Valid[0]
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(r.Invalidated))
	for _, node := range r.Invalidated {
		if node == s.self {
			continue // the leader applied the command already
		}
		deadline, leased := s.cl.LeaseDeadline(node)
		if !leased {
			continue // no lease: it cannot serve, and its next lease carries this index
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.invalidateOn(ctx, node, deadline, req)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return s.settle(ctx, r.File)
}

// settle makes a pending version visible, once no node can answer for the
// previous state any more (run on the leader, after the barrier); the
// settles of concurrent writes go in one entry (settlebatch.go).
func (s *Service) settle(ctx context.Context, f *meta.File) error {
	if f == nil || !f.Pending {
		return nil
	}
	err, ctxErr := s.settles.submit(ctx, meta.Item{Path: f.Path, Version: f.Version})
	if ctxErr != nil {
		err = ctxErr
	}
	if err != nil {
		return fmt.Errorf("settle %s: %w", f.Path, err)
	}
	return nil
}

// invalidateOn tells node to stop serving req.Path, or waits until its
// lease has expired if it cannot be told.
func (s *Service) invalidateOn(ctx context.Context, node string, deadline time.Time, req Invalidation) error {
	cctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if _, peer, ok := s.nodeAddrs(node); ok {
		// Retry until the lease deadline: a pooled connection to a node
		// that restarted fails once, and waiting out a lease costs more.
		for cctx.Err() == nil {
			err := s.invs.send(cctx, peer, req)
			if err == nil {
				return nil
			}
			s.log.Debug("invalidate failed; retrying until the lease expires", "node", node, "path", req.Path, "err", err)
			select {
			case <-cctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	s.metrics.leaseWaits.Inc()
	select {
	case <-time.After(time.Until(deadline)):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("invalidate %s on %s: %w", req.Path, node, ctx.Err())
	}
}
