package auth

import (
	"math"
	"sync"
	"time"
)

// FailureLimiter slows down password guessing: each failed login counts
// against its address and against the user it named; a key with Burst
// failures not yet forgiven (one forgiven every Period) is refused until
// one is.
type FailureLimiter struct {
	// Burst is how many failures a key may have before it is refused.
	Burst int
	// Period is how long it takes to forgive one failure.
	Period time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu   sync.Mutex
	keys map[string]*failures
}

type failures struct {
	count float64
	at    time.Time
}

// DefaultFailureLimiter allows 10 failures, then one more every 6 s (ten a
// minute) per address and per user.
func DefaultFailureLimiter() *FailureLimiter {
	return &FailureLimiter{Burst: 10, Period: 6 * time.Second}
}

// maxTracked bounds the keys held; beyond it, forgiven keys are dropped.
const maxTracked = 100_000

func (l *FailureLimiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// decayed returns f's count at now.
func (l *FailureLimiter) decayed(f *failures, now time.Time) float64 {
	return math.Max(0, f.count-float64(now.Sub(f.at))/float64(l.Period))
}

// Wait returns how long the keys (e.g. "addr:10.0.0.1", "user:alice")
// must wait before another try: 0 when they may try now.
func (l *FailureLimiter) Wait(keys ...string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var wait time.Duration
	for _, k := range keys {
		f, ok := l.keys[k]
		if !ok {
			continue
		}
		if over := l.decayed(f, now) - float64(l.Burst-1); over > 0 {
			wait = max(wait, time.Duration(over*float64(l.Period)))
		}
	}
	return wait
}

// Fail counts a failed login against each key.
func (l *FailureLimiter) Fail(keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.keys == nil {
		l.keys = map[string]*failures{}
	}
	if len(l.keys) >= maxTracked {
		for k, f := range l.keys {
			if l.decayed(f, now) == 0 {
				delete(l.keys, k)
			}
		}
	}
	for _, k := range keys {
		f, ok := l.keys[k]
		if !ok {
			f = &failures{}
			l.keys[k] = f
		}
		f.count = l.decayed(f, now) + 1
		f.at = now
	}
}
