// Package pause waits for a while or until a moment, giving up as soon as
// a context is done: the one timer-and-select every loop that backs off,
// paces or starts at a shared time needs.
package pause

import (
	"context"
	"time"
)

// For waits d (not at all when d <= 0) and returns ctx's error if ctx is
// done first, or when it is already done.
func For(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Until waits until t (not at all when t is zero or past).
func Until(ctx context.Context, t time.Time) error {
	if t.IsZero() {
		return ctx.Err()
	}
	return For(ctx, time.Until(t))
}
