package files

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// gatePeers answers invalidations only when the test lets each call go.
type gatePeers struct {
	Peers // nil: only Invalidate is called
	calls chan []Invalidation
	gate  chan error
}

func (g *gatePeers) Invalidate(ctx context.Context, peer string, invs []Invalidation) error {
	g.calls <- invs
	select {
	case err := <-g.gate:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestInvalidationsBatched: while one request to a node is in flight, the
// invalidations of other writes queue and go in the next request together;
// each sender gets the answer of the request that carried its own, a
// failure included, and one whose deadline passes stops waiting.
func TestInvalidationsBatched(t *testing.T) {
	g := &gatePeers{calls: make(chan []Invalidation, 8), gate: make(chan error)}
	b := newInvBatcher(g)
	send := func(path string, d time.Duration) chan error {
		out := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			out <- b.send(ctx, "n2", Invalidation{Path: path, Index: 7})
		}()
		return out
	}
	first := send("a", 10*time.Second)
	if got := <-g.calls; len(got) != 1 || got[0].Path != "a" {
		t.Fatalf("first request carried %v, want [a]", got)
	}
	var queued []chan error
	for i := range 5 {
		queued = append(queued, send(fmt.Sprintf("q%d", i), 10*time.Second))
	}
	gone := send("gone", 50*time.Millisecond) // stops waiting before its batch is answered
	// Every sender is queued once the batcher holds 6 items.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.mu.Lock()
		n := len(b.q["n2"].items)
		b.mu.Unlock()
		if n == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d invalidations queued, want 6", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := <-gone; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sender past its deadline got %v", err)
	}
	g.gate <- nil // the first request answered
	if err := <-first; err != nil {
		t.Fatalf("first: %v", err)
	}
	second := <-g.calls
	if len(second) != 6 {
		t.Fatalf("second request carried %d invalidations, want the 6 queued", len(second))
	}
	refused := errors.New("peer refused")
	g.gate <- refused
	for i, c := range queued {
		if err := <-c; !errors.Is(err, refused) {
			t.Fatalf("queued %d got %v, want its batch's error", i, err)
		}
	}
	// The queue is gone once drained; the next send starts a new one.
	next := send("b", 10*time.Second)
	if got := <-g.calls; len(got) != 1 || got[0].Path != "b" {
		t.Fatalf("third request carried %v, want [b]", got)
	}
	g.gate <- nil
	if err := <-next; err != nil {
		t.Fatal(err)
	}
}
