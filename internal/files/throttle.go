package files

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/pause"
)

// Bounds of the throttle's bucket. The bucket holds an eighth of a
// second's worth of bytes, so a fetch that starts after a quiet spell goes
// at most that far ahead of the rate; at least minBurst, so that one
// network read (32 KiB) always fits; at most maxBurst, so that a very high
// cap does not let a burst of many MiB through at once.
const (
	minBurst = 64 << 10
	maxBurst = 4 << 20
)

// throttle is a token bucket of bytes: the cap on a node's replica
// fetches (the cluster setting replication.rate). One throttle is shared
// by every concurrent fetch of the node, so together they stay within the
// rate whatever their number.
//
// A wait reserves its bytes at once (the balance may go negative) and
// sleeps until the balance would have covered them; later waiters queue
// behind the reservations made before them, so concurrent fetches share
// the rate in arrival order. A wait for more than the bucket holds is cut
// into bucket-sized pieces, each reserved and slept for in turn, so a
// large read neither overshoots the rate nor holds a reservation that
// starves the others.
type throttle struct {
	mu     sync.Mutex
	rate   float64   // bytes per second; 0: no cap
	burst  float64   // bucket size in bytes
	tokens float64   // balance in bytes; negative: reserved ahead
	last   time.Time // when tokens was brought up to date

	// now and sleep are the clock (time.Now and pause.For but in tests).
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

func newThrottle() *throttle { return &throttle{now: time.Now, sleep: pause.For} }

// burstFor is the bucket size for a rate.
func burstFor(rate float64) float64 { return min(max(rate/8, minBurst), maxBurst) }

// setRate changes the cap (bytes per second; 0 or less: none). Fetches in
// progress take the new rate from their next piece on.
func (t *throttle) setRate(bytesPerSec int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rate := max(float64(bytesPerSec), 0)
	if rate == t.rate {
		return
	}
	t.advance()
	t.rate, t.burst = rate, burstFor(rate)
	if rate == 0 {
		t.tokens = 0 // no cap: nothing owed; a new cap starts from empty
		return
	}
	t.tokens = min(t.tokens, t.burst)
}

// advance credits the bytes earned since last. Called with mu held.
func (t *throttle) advance() {
	now := t.now()
	if t.rate > 0 && now.After(t.last) {
		t.tokens = min(t.tokens+now.Sub(t.last).Seconds()*t.rate, t.burst)
	}
	t.last = now
}

// piece returns how many bytes one reservation may take (0: no cap).
func (t *throttle) piece() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate == 0 {
		return 0
	}
	return int(t.burst)
}

// reserve takes n bytes (n ≤ burst) from the bucket and returns how long
// the caller must wait before using them.
func (t *throttle) reserve(n float64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate == 0 {
		return 0
	}
	t.advance()
	t.tokens -= n
	if t.tokens >= 0 {
		return 0
	}
	return time.Duration(-t.tokens / t.rate * float64(time.Second))
}

// refund gives back a reservation whose wait was cancelled.
func (t *throttle) refund(n float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate > 0 {
		t.tokens = min(t.tokens+n, t.burst)
	}
}

// wait blocks until n more bytes may be fetched, or ctx ends. It returns
// the time it slept.
func (t *throttle) wait(ctx context.Context, n int64) (time.Duration, error) {
	var slept time.Duration
	for n > 0 {
		c := n
		if p := int64(t.piece()); p == 0 {
			return slept, nil
		} else if c > p {
			c = p
		}
		d := t.reserve(float64(c))
		if d > 0 {
			if err := t.sleep(ctx, d); err != nil {
				t.refund(float64(c))
				return slept, err
			}
			slept += d
		}
		n -= c
	}
	return slept, nil
}

// throttledReader passes a fetch's body through the node's throttle,
// counting the bytes as they arrive and the time spent waiting.
type throttledReader struct {
	ctx context.Context
	r   io.Reader
	t   *throttle
	m   *Metrics
}

func (r *throttledReader) Read(p []byte) (int, error) {
	if most := r.t.piece(); most > 0 && len(p) > most {
		p = p[:most]
	}
	n, err := r.r.Read(p)
	if n > 0 {
		r.m.replicationBytes.Add(float64(n))
		slept, werr := r.t.wait(r.ctx, int64(n))
		r.m.throttleWait.Add(slept.Seconds())
		if werr != nil {
			return n, werr
		}
	}
	return n, err
}
