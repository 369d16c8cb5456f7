package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Op performs one request on behalf of logical client c (0 <= c <
// Config.Clients) and returns the payload bytes it moved. It must return
// when ctx is done.
type Op func(ctx context.Context, c int) (int64, error)

// DefaultTimeout is the default per-request timeout.
const DefaultTimeout = 60 * time.Second

// Config describes the load of one run.
type Config struct {
	// Clients: in closed loop, the number of workers, each issuing its
	// requests back to back; in open loop, the number of logical clients
	// the scheduled requests are spread over (round robin).
	Clients int
	// Rate > 0 selects the open loop: requests are scheduled at this many
	// per second, whatever the answers, and their latency is measured from
	// the scheduled time.
	Rate float64
	// MaxOutstanding bounds the requests in flight in open loop; a
	// scheduled request that would exceed it is not sent but counted as
	// dropped. Default max(256, Clients).
	MaxOutstanding int
	// Count bounds the measured requests (open loop: scheduled ones,
	// including the dropped), Duration the measured time; 0 means no bound,
	// but at least one must be set. The first bound reached stops the run.
	Count    int64
	Duration time.Duration
	// Warmup runs the load for this long before the measured phase.
	Warmup time.Duration
	// Timeout is the per-request timeout (default DefaultTimeout).
	Timeout time.Duration
	// Progress, when not nil, receives a progress line (meant for a
	// terminal, see Terminal) at most 4 times per second; Name prefixes it.
	Progress io.Writer
	Name     string
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	switch {
	case c.Clients < 1:
		return fmt.Errorf("clients must be at least 1 (got %d)", c.Clients)
	case c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0):
		return fmt.Errorf("rate must be a positive number of requests per second (got %v)", c.Rate)
	case c.Count < 0:
		return fmt.Errorf("count must not be negative (got %d)", c.Count)
	case c.Duration < 0 || c.Warmup < 0 || c.Timeout < 0:
		return errors.New("durations must not be negative")
	case c.Count == 0 && c.Duration == 0:
		return errors.New("a run needs a bound: a count, a duration or both")
	case c.MaxOutstanding < 0:
		return fmt.Errorf("max outstanding must not be negative (got %d)", c.MaxOutstanding)
	}
	return nil
}

// Run runs op under the load described by cfg and returns what was measured.
// It returns when the count or the duration is reached (or ctx is done) and
// every request sent has completed; each request is bounded by cfg.Timeout.
func Run(ctx context.Context, cfg Config, op Op) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxOutstanding == 0 {
		cfg.MaxOutstanding = max(256, cfg.Clients)
	}
	rec := newRecorder()
	start := time.Now()
	ph := phases{measure: start.Add(cfg.Warmup)}
	if cfg.Duration > 0 {
		ph.deadline = ph.measure.Add(cfg.Duration)
	}
	stopProgress := startProgress(cfg.Progress, cfg.Name, rec, start, ph.measure)
	mode := "closed"
	if cfg.Rate > 0 {
		mode = "open"
		runOpen(ctx, &cfg, ph, op, rec)
	} else {
		runClosed(ctx, &cfg, ph, op, rec)
	}
	stopProgress()
	res := rec.result(ph.measure, time.Now())
	res.Mode, res.Clients, res.Rate = mode, cfg.Clients, cfg.Rate
	return res, nil
}

// phases are the times that split a run: warm-up before measure, measured
// phase until deadline (zero: no deadline).
type phases struct{ measure, deadline time.Time }

// over reports whether t is at or past the deadline.
func (p phases) over(t time.Time) bool { return !p.deadline.IsZero() && !t.Before(p.deadline) }

// measured reports whether a request starting or scheduled at t counts.
func (p phases) measured(t time.Time) bool { return !t.Before(p.measure) }

// do runs one request with the per-request timeout; measured tells the op
// (see isMeasured) whether the request counts.
func do(ctx context.Context, cfg *Config, op Op, c int, measured bool) (int64, error) {
	rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	return op(context.WithValue(rctx, measuredKey{}, measured), c)
}

// measuredKey marks the context of a request with whether it counts.
type measuredKey struct{}

// isMeasured reports whether the request of ctx counts in the figures: false
// during the warm-up, true outside Run. An op that records figures of its
// own (conn-rate's connect and reply times) leaves the warm-up out with it.
func isMeasured(ctx context.Context) bool {
	m, ok := ctx.Value(measuredKey{}).(bool)
	return m || !ok
}

// runClosed: cfg.Clients workers issue requests back to back.
func runClosed(ctx context.Context, cfg *Config, ph phases, op Op, rec *recorder) {
	var issued atomic.Int64 // measured requests claimed, may exceed Count by the losers
	var wg sync.WaitGroup
	for c := range cfg.Clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				if ph.over(t0) {
					return
				}
				measured := ph.measured(t0)
				if measured {
					if n := issued.Add(1); cfg.Count > 0 && n > cfg.Count {
						return
					}
					rec.issue()
				}
				n, err := do(ctx, cfg, op, c, measured)
				if measured {
					t1 := time.Now()
					rec.done(t1.Sub(t0), n, err, t1)
				}
			}
		})
	}
	wg.Wait()
}

// runOpen: request k is scheduled at start + k/Rate and sent then, or as
// soon as possible when the generator is late; at most MaxOutstanding are
// in flight, a request beyond that is dropped.
func runOpen(ctx context.Context, cfg *Config, ph phases, op Op, rec *recorder) {
	start := ph.measure.Add(-cfg.Warmup)
	sem := make(chan struct{}, cfg.MaxOutstanding)
	var wg sync.WaitGroup
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var scheduled int64 // measured requests scheduled
	for k := int64(0); ctx.Err() == nil; k++ {
		at := start.Add(time.Duration(float64(k) * float64(time.Second) / cfg.Rate))
		if ph.over(at) {
			break
		}
		measured := ph.measured(at)
		if measured {
			if cfg.Count > 0 && scheduled >= cfg.Count {
				break
			}
			scheduled++
		}
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
			if ctx.Err() != nil {
				break
			}
		}
		select {
		case sem <- struct{}{}:
		default:
			if measured {
				rec.drop()
			}
			continue
		}
		if measured {
			rec.issue()
		}
		c := int(k % int64(cfg.Clients))
		wg.Go(func() {
			defer func() { <-sem }()
			n, err := do(ctx, cfg, op, c, measured)
			if measured {
				t1 := time.Now()
				rec.done(t1.Sub(at), n, err, t1)
			}
		})
	}
	wg.Wait()
}
