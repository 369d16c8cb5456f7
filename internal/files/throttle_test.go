package files

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// fakeClock is the throttle's clock in tests: sleeping advances it at
// once (frozen: sleeps are only recorded), so the tests count the time
// the rate demands rather than measure it.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	frozen bool
	sleeps []time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	if !c.frozen {
		c.t = c.t.Add(d)
	}
	return nil
}

func (c *fakeClock) idle(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) elapsed(since time.Time) time.Duration { return c.now().Sub(since) }

func newFakeThrottle(rate int64) (*throttle, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	th := &throttle{now: clk.now, sleep: clk.sleep}
	th.setRate(rate)
	return th, clk
}

const (
	kib = 1 << 10
	mib = 1 << 20
)

// step is one call in a throttle scenario: idle time passes, or a wait
// for n bytes.
type step struct {
	idle time.Duration
	n    int64
}

func TestThrottleWait(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  int64
		steps []step
		// want is the time the waits must take in all (on the fake clock,
		// idle time excluded); pieces, how many sleeps they took at most.
		want      time.Duration
		maxPieces int
	}{
		{"no cap", 0, []step{{n: 10 * mib}, {n: 1}}, 0, 0},
		{"a fresh cap starts empty", mib, []step{{n: 128 * kib}}, 125 * time.Millisecond, 1},
		{"what the bucket earned passes at once", mib, []step{{idle: time.Second}, {n: 128 * kib}}, 0, 0},
		{"the bucket holds an eighth of a second", mib, []step{{idle: time.Hour}, {n: 128*kib + mib}}, time.Second, 8},
		{"1 MiB at 1 MiB/s", mib, []step{{n: mib}}, time.Second, 8},
		{"10 MiB in one wait is cut into pieces", mib, []step{{n: 10 * mib}}, 10 * time.Second, 80},
		{"many small reads", mib, []step{{n: 1000}, {n: 1000}, {n: mib - 2000}}, time.Second, 10},
		{"the minimum bucket holds one network read", 64 * kib, []step{{idle: time.Minute}, {n: 64 * kib}, {n: 32 * kib}}, 500 * time.Millisecond, 1},
		{"the bucket is at most 4 MiB", 1 << 30, []step{{idle: time.Minute}, {n: 4*mib + 1<<30}}, time.Second, 256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th, clk := newFakeThrottle(tc.rate)
			var waited, idle time.Duration
			start := clk.now()
			for _, s := range tc.steps {
				if s.idle > 0 {
					clk.idle(s.idle)
					idle += s.idle
					continue
				}
				d, err := th.wait(context.Background(), s.n)
				if err != nil {
					t.Fatal(err)
				}
				waited += d
			}
			if got := clk.elapsed(start) - idle; !near(got, tc.want) {
				t.Errorf("the waits took %v on the clock, want %v", got, tc.want)
			}
			if !near(waited, tc.want) {
				t.Errorf("wait reported %v slept, want %v", waited, tc.want)
			}
			if len(clk.sleeps) > tc.maxPieces {
				t.Errorf("%d sleeps, want at most %d", len(clk.sleeps), tc.maxPieces)
			}
			if tc.rate > 0 {
				longest := time.Duration(burstFor(float64(tc.rate)) / float64(tc.rate) * float64(time.Second))
				for _, d := range clk.sleeps {
					if d > longest+time.Microsecond {
						t.Errorf("a sleep of %v: a piece is at most the bucket (%v)", d, longest)
					}
				}
			}
		})
	}
}

// near allows the rounding of float seconds to nanoseconds.
func near(a, b time.Duration) bool { return (a - b).Abs() <= time.Microsecond }

// Concurrent fetches share the rate: with the clock frozen, the last
// reservation is due when the bytes of all of them together would have
// passed at the rate.
func TestThrottleShared(t *testing.T) {
	th, clk := newFakeThrottle(mib)
	clk.idle(time.Hour) // the bucket fills (128 KiB)
	clk.frozen = true
	const fetchers, each = 8, 512 * kib
	var wg sync.WaitGroup
	for range fetchers {
		wg.Go(func() {
			if _, err := th.wait(context.Background(), each); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var last time.Duration
	for _, d := range clk.sleeps {
		last = max(last, d)
	}
	// 4 MiB in all, the first 128 KiB from the full bucket.
	if want := time.Duration(float64(fetchers*each-128*kib) / mib * float64(time.Second)); !near(last, want) {
		t.Errorf("last piece due after %v, want %v", last, want)
	}
	if pieces := fetchers * each / (128 * kib); len(clk.sleeps) != pieces-1 {
		t.Errorf("%d sleeps, want %d (every piece but the first)", len(clk.sleeps), pieces-1)
	}
}

// A cancelled wait returns at once and gives its bytes back.
func TestThrottleCancel(t *testing.T) {
	th, clk := newFakeThrottle(mib)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := th.wait(ctx, 10*mib); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait on a cancelled context: %v", err)
	}
	start := clk.now()
	if _, err := th.wait(context.Background(), mib); err != nil {
		t.Fatal(err)
	}
	if got := clk.elapsed(start); !near(got, time.Second) {
		t.Errorf("after the refund 1 MiB took %v, want 1s", got)
	}
}

// A new rate applies to the next piece; lowering it shrinks the bucket.
func TestThrottleSetRate(t *testing.T) {
	th, clk := newFakeThrottle(mib)
	clk.idle(time.Hour)
	th.setRate(2 * mib) // the bucket, full at 128 KiB, may now hold 256 KiB: it has not earned more yet
	start := clk.now()
	if _, err := th.wait(context.Background(), 128*kib+2*mib); err != nil {
		t.Fatal(err)
	}
	if got := clk.elapsed(start); !near(got, time.Second) {
		t.Errorf("2 MiB at 2 MiB/s took %v, want 1s", got)
	}
	clk.idle(time.Hour)
	th.setRate(256 * kib) // bucket 64 KiB
	start = clk.now()
	if _, err := th.wait(context.Background(), 64*kib+256*kib); err != nil {
		t.Fatal(err)
	}
	if got := clk.elapsed(start); !near(got, time.Second) {
		t.Errorf("256 KiB at 256 KiB/s took %v, want 1s", got)
	}
	th.setRate(0)
	start = clk.now()
	if _, err := th.wait(context.Background(), 100*mib); err != nil || clk.elapsed(start) != 0 {
		t.Errorf("no cap: waited %v, %v", clk.elapsed(start), err)
	}
}

// The reader counts every byte, waits for them, and keeps each read
// within one piece.
func TestThrottledReader(t *testing.T) {
	th, clk := newFakeThrottle(mib)
	m := NewMetrics(nil)
	src := bytes.NewReader(make([]byte, 3*mib))
	r := &throttledReader{ctx: context.Background(), r: src, t: th, m: m}
	start := clk.now()
	n, err := io.CopyBuffer(io.Discard, r, make([]byte, 1*mib))
	if err != nil || n != 3*mib {
		t.Fatalf("copied %d, %v", n, err)
	}
	if got := clk.elapsed(start); !near(got, 3*time.Second) {
		t.Errorf("3 MiB at 1 MiB/s took %v on the clock, want 3s", got)
	}
	if got := counterValue(t, m.replicationBytes); got != 3*mib {
		t.Errorf("replication_bytes_total = %v, want %d", got, 3*mib)
	}
	if got := counterValue(t, m.throttleWait); got < 2.999 || got > 3.001 {
		t.Errorf("replication_throttle_seconds_total = %v, want 3", got)
	}
	for _, d := range clk.sleeps {
		if d > 125*time.Millisecond+time.Microsecond {
			t.Errorf("a read waited %v: more than one piece", d)
		}
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
