package pause

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want error
	}{
		{"elapses", context.Background(), time.Millisecond, nil},
		{"nothing to wait", context.Background(), 0, nil},
		{"done first", done, time.Hour, context.Canceled},
		{"done, nothing to wait", done, -time.Second, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := For(tc.ctx, tc.d); !errors.Is(err, tc.want) {
				t.Fatalf("For = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestUntil(t *testing.T) {
	if err := Until(context.Background(), time.Time{}); err != nil {
		t.Fatalf("zero time: %v", err)
	}
	if err := Until(context.Background(), time.Now().Add(-time.Hour)); err != nil {
		t.Fatalf("past: %v", err)
	}
	start := time.Now()
	at := start.Add(5 * time.Millisecond)
	if err := Until(context.Background(), at); err != nil || time.Now().Before(at) {
		t.Fatalf("returned %v before %v", err, at)
	}
}
