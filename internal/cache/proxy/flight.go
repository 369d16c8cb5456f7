package proxy

import (
	"context"
	"strings"
	"sync"
	"time"
)

// flight is one origin fetch that concurrent misses for the same key
// wait for instead of fetching themselves.
type flight struct {
	done    chan struct{}
	stored  bool // set before done is closed
	waiters int
}

// flights collapses concurrent misses per key, with a cap on each
// waiting list.
type flights struct {
	mu         sync.Mutex
	m          map[string]*flight
	maxWaiters int
}

func newFlights(maxWaiters int) *flights {
	return &flights{m: map[string]*flight{}, maxWaiters: maxWaiters}
}

// join returns the key's flight: leader is true when the caller must
// fetch (and call finish); full is true when the waiting list is at its
// cap (the caller fetches on its own, without leading).
func (f *flights) join(key string) (fl *flight, leader, full bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl = f.m[key]; fl == nil {
		fl = &flight{done: make(chan struct{})}
		f.m[key] = fl
		return fl, true, false
	}
	if fl.waiters >= f.maxWaiters {
		return nil, false, true
	}
	fl.waiters++
	return fl, false, false
}

// busy reports whether a fetch for key is under way.
func (f *flights) busy(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[key] != nil
}

// finish ends the leader's flight: stored says whether waiters can now
// find the object in the cache; otherwise they go to the origin.
func (f *flights) finish(key string, fl *flight, stored bool) {
	f.mu.Lock()
	if f.m[key] == fl {
		delete(f.m, key)
	}
	f.mu.Unlock()
	fl.stored = stored
	close(fl.done)
}

// wait waits for the flight to land, at most timeout: true when the
// leader stored the object.
func (fl *flight) wait(ctx context.Context, timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-fl.done:
		return fl.stored
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// waiting is how many requests wait for key's flight (tests).
func (f *flights) waiting(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, fl := range f.m {
		if strings.HasSuffix(k, " "+key) {
			return fl.waiters
		}
	}
	return 0
}
