package files

import (
	"context"
	"sync"
	"time"
)

// maxInvBatch bounds the invalidations sent in one request.
const maxInvBatch = 256

// invBatcher sends the leader's invalidations to each node in batches:
// while a request to a node is in flight, the invalidations of other
// writes for that node queue, and the next request carries them all. A
// write's barrier still waits for the node's answer to the request that
// carried its invalidation, so what each write is told is unchanged
// (docs/protocol.md, "Write"); the leader sends one request per node per
// round trip instead of one per write and node.
type invBatcher struct {
	peers Peers
	mu    sync.Mutex
	q     map[string]*invQueue // peer address → invalidations not yet sent
}

type invQueue struct {
	items   []*invItem
	sending bool // a goroutine is sending this queue's batches
}

type invItem struct {
	inv      Invalidation
	deadline time.Time  // the latest the sender waits for the answer
	done     chan error // buffered: the sender never blocks on it
}

func newInvBatcher(p Peers) *invBatcher {
	return &invBatcher{peers: p, q: map[string]*invQueue{}}
}

// send tells the node at peer to stop serving inv.Path until it has
// applied inv.Index, in a batch with others for that node, and returns
// its answer; ctx must have a deadline (the node's lease).
func (b *invBatcher) send(ctx context.Context, peer string, inv Invalidation) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	it := &invItem{inv: inv, deadline: deadline, done: make(chan error, 1)}
	b.mu.Lock()
	q := b.q[peer]
	if q == nil {
		q = &invQueue{}
		b.q[peer] = q
	}
	q.items = append(q.items, it)
	start := !q.sending
	q.sending = true
	b.mu.Unlock()
	if start {
		go b.drain(peer, q)
	}
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain sends q's invalidations, a batch at a time, until none is left.
func (b *invBatcher) drain(peer string, q *invQueue) {
	for {
		b.mu.Lock()
		items := q.items
		if len(items) > maxInvBatch {
			items = items[:maxInvBatch]
		}
		q.items = q.items[len(items):]
		if len(items) == 0 {
			q.sending = false
			delete(b.q, peer)
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		invs := make([]Invalidation, len(items))
		deadline := items[0].deadline
		for i, it := range items {
			invs[i] = it.inv
			if it.deadline.After(deadline) {
				deadline = it.deadline
			}
		}
		// Nobody waits for this answer past the latest deadline among
		// them; an item whose own deadline passed has stopped waiting.
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := b.peers.Invalidate(ctx, peer, invs)
		cancel()
		for _, it := range items {
			it.done <- err
		}
	}
}
