package files

import (
	"context"
	"sync"
	"time"
)

// batcher applies items in batches: while one batch is being applied,
// the items submitted meanwhile queue, and the next batch carries them
// all, up to max. Each submitter waits for its own item's outcome, so
// what it is told, and when, is what a call of its own would have told
// it. The replica reports and the leader's settles go through one each
// (replbatch.go, settlebatch.go).
type batcher[I, O any] struct {
	max int
	// apply applies one batch and returns one outcome per item.
	apply func(ctx context.Context, items []I) []O
	// shared: the submitters share one context (a worker's, cancelled at
	// its shutdown), and a batch is applied under it. Otherwise a batch
	// is applied until the latest of its submitters' deadlines (10 s for
	// one without) and cancelled by none: one giving up does not fail
	// the others.
	shared bool

	mu      sync.Mutex
	q       []*batchItem[I, O]
	sending bool // a goroutine drains q
}

type batchItem[I, O any] struct {
	ctx      context.Context
	item     I
	deadline time.Time
	done     chan O // buffered: the drainer never blocks on it
}

// submit applies item in a batch with others and returns its outcome, or
// ctx's error if ctx ends first.
func (b *batcher[I, O]) submit(ctx context.Context, item I) (O, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	it := &batchItem[I, O]{ctx: ctx, item: item, deadline: deadline, done: make(chan O, 1)}
	b.mu.Lock()
	b.q = append(b.q, it)
	start := !b.sending
	b.sending = true
	b.mu.Unlock()
	if start {
		go b.drain()
	}
	select {
	case o := <-it.done:
		return o, nil
	case <-ctx.Done():
		var zero O
		return zero, ctx.Err()
	}
}

// drain applies the queued items, a batch at a time, until none is left.
func (b *batcher[I, O]) drain() {
	for {
		b.mu.Lock()
		batch := b.q[:min(len(b.q), b.max)]
		b.q = b.q[len(batch):]
		if len(batch) == 0 {
			b.sending, b.q = false, nil
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		items := make([]I, len(batch))
		deadline := batch[0].deadline
		for i, it := range batch {
			items[i] = it.item
			if it.deadline.After(deadline) {
				deadline = it.deadline
			}
		}
		ctx, cancel := batch[0].ctx, context.CancelFunc(func() {})
		if !b.shared {
			ctx, cancel = context.WithDeadline(context.Background(), deadline)
		}
		outs := b.apply(ctx, items)
		cancel()
		for i, it := range batch {
			it.done <- outs[i]
		}
	}
}
