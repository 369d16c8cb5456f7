package files

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// settleBatcher, on the leader, commits the settles of writes whose
// barriers end while another settle is being applied in one Settles
// entry (core v6), up to meta.MaxItems: a write at N servers cost a
// commit and a settle, each appended, sent to every follower and applied
// by every node. Each write still waits for the entry that carries its
// own settle, so what it is told, and when, is unchanged
// (docs/decisions/0052-settles-batched.md).
type settleBatcher struct {
	s       *Service
	mu      sync.Mutex
	q       []*settleItem
	sending bool // a goroutine drains q
}

type settleItem struct {
	item     meta.Item
	deadline time.Time
	done     chan error // buffered: the sender never blocks on it
}

// settle commits the settle of f's version, in a batch with others, and
// returns once the leader has applied it.
func (b *settleBatcher) settle(ctx context.Context, f *meta.File) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	it := &settleItem{item: meta.Item{Path: f.Path, Version: f.Version}, deadline: deadline, done: make(chan error, 1)}
	b.mu.Lock()
	b.q = append(b.q, it)
	start := !b.sending
	b.sending = true
	b.mu.Unlock()
	if start {
		go b.drain()
	}
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain commits the queued settles, a batch at a time, until none is
// left. A batch is given until the latest deadline among its writers.
func (b *settleBatcher) drain() {
	for {
		b.mu.Lock()
		batch := b.q
		if len(batch) > meta.MaxItems {
			batch = batch[:meta.MaxItems]
		}
		b.q = b.q[len(batch):]
		if len(batch) == 0 {
			b.sending, b.q = false, nil
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		deadline := batch[0].deadline
		items := make([]meta.Item, len(batch))
		for i, it := range batch {
			items[i] = it.item
			if it.deadline.After(deadline) {
				deadline = it.deadline
			}
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		errs := b.apply(ctx, items)
		cancel()
		for i, it := range batch {
			it.done <- errs[i]
		}
	}
}

// apply commits items as one Settles entry, or one Settle each for a
// single item or while a voter is older than core v6. A settle refused as
// stale (the file changed since) is not an error: a later version
// superseded it.
func (b *settleBatcher) apply(ctx context.Context, items []meta.Item) []error {
	errs := make([]error, len(items))
	if len(items) > 1 {
		_, err := b.s.cl.Apply(ctx, meta.Command{Kind: meta.KindSettles, Items: items})
		if !errors.Is(err, meta.ErrUnsupported) {
			for i := range errs {
				errs[i] = err
			}
			return errs
		}
	}
	for i, it := range items {
		res, err := b.s.cl.Apply(ctx, meta.Command{Kind: meta.KindSettle, Path: it.Path, Version: it.Version})
		if err == nil && res.Err != nil && !errors.Is(res.Err, meta.ErrStale) {
			err = res.Err
		}
		errs[i] = err
	}
	return errs
}
