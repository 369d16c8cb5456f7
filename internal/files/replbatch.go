package files

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// replicaReports sends this node's replica reports in batches: while one
// report is being applied, those of other fetches that finish queue, and
// the next entry (Replicas, core v5) carries them all, up to
// meta.MaxItems. With replication to every node, each write made N−1
// Replica entries, each applied by every node; under a steady stream of
// small writes a node now makes about one entry per round trip to the
// leader (docs/decisions/0051-replicas-and-releases-batched.md).
type replicaReports struct {
	s  *Service
	mu sync.Mutex
	q  []*replicaReport
	// sending is set while a goroutine drains q.
	sending bool
}

type replicaReport struct {
	item meta.Item
	done chan reportOutcome // buffered: the sender never blocks on it
}

// reportOutcome is what became of one report: err if the cluster could
// not be reached; else accepted unless the state machine refused it (a
// stale version, a suspended file).
type reportOutcome struct {
	accepted bool
	err      error
}

// report applies a Replica report of f's version by this node, in a
// batch with others, and returns once this node has applied it: whether
// the state machine accepted it (a stale version is refused, not an
// error), or the error if the cluster could not be reached.
// ctx is the replication worker's: a batch started by this call is
// applied under it, also for the reports queued behind this one.
func (b *replicaReports) report(ctx context.Context, f *meta.File) (bool, error) {
	r := &replicaReport{item: meta.Item{Path: f.Path, Version: f.Version}, done: make(chan reportOutcome, 1)}
	b.mu.Lock()
	b.q = append(b.q, r)
	start := !b.sending
	b.sending = true
	b.mu.Unlock()
	if start {
		go b.drain(ctx)
	}
	select {
	case o := <-r.done:
		return o.accepted, o.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// drain applies the queued reports, a batch at a time, until none is
// left. ctx is the first reporter's: the replication worker's.
func (b *replicaReports) drain(ctx context.Context) {
	for {
		b.mu.Lock()
		batch := b.q
		if len(batch) > meta.MaxItems {
			batch = batch[:meta.MaxItems]
		}
		b.q = b.q[len(batch):]
		if len(batch) == 0 {
			b.sending = false
			b.q = nil
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		items := make([]meta.Item, len(batch))
		for i, r := range batch {
			items[i] = r.item
		}
		outs := b.apply(ctx, items)
		for i, r := range batch {
			r.done <- outs[i]
		}
	}
}

// apply commits items as one Replicas entry, or one Replica entry each
// for a single item or while a voter is older than core v5.
func (b *replicaReports) apply(ctx context.Context, items []meta.Item) []reportOutcome {
	outs := make([]reportOutcome, len(items))
	if len(items) > 1 {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := b.s.cl.Apply(cctx, meta.Command{Kind: meta.KindReplicas, Node: b.s.self, Items: items})
		cancel()
		if err == nil && res.Err != nil {
			err = res.Err
		}
		if !errors.Is(err, meta.ErrUnsupported) {
			for i := range outs {
				outs[i] = reportOutcome{accepted: err == nil, err: err}
			}
			if err == nil {
				for _, i := range res.Refused {
					if i >= 0 && i < len(outs) {
						outs[i].accepted = false
					}
				}
			}
			return outs
		}
	}
	for i, it := range items {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := b.s.cl.Apply(cctx, meta.Command{Kind: meta.KindReplica, Path: it.Path, Version: it.Version, Node: b.s.self})
		cancel()
		outs[i] = reportOutcome{accepted: err == nil && res.Err == nil, err: err}
	}
	return outs
}
