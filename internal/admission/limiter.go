package admission

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mure-dev/mure/internal/api"
)

// CodeOverloaded is the error code of a request the node turned away.
const CodeOverloaded = api.CodeOverloaded

// Defaults used for zero Config fields.
//
// MaxInFlight is a fixed number rather than a multiple of GOMAXPROCS:
// mure's handlers spend their time on disk and network I/O (sendfile,
// replication to peers), not CPU, so the useful concurrency does not
// scale with cores; what the limit must bound is what each running
// handler holds: a blob file descriptor, often a peer connection and a
// copy buffer. 256 of them stay far below the descriptor limit Go sets
// on Linux (the hard limit) and a few tens of MiB of buffers, while
// leaving ample headroom over the concurrency a healthy node needs
// (Little's law: 2,000 req/s at 50 ms is 100 in flight).
//
// MaxQueue (1024) absorbs bursts of about four times the slots;
// QueueTimeout (2 s) bounds the extra latency of what is admitted, and
// anything that would wait longer is better retried on another node.
const (
	DefaultMaxInFlight  = 256
	DefaultMaxQueue     = 1024
	DefaultQueueTimeout = 2 * time.Second
	DefaultRetryAfter   = 1
)

// DefaultExempt are the paths used when Config.Exempt is nil.
var DefaultExempt = []string{"/healthz", "/readyz", "/metrics", "/status"}

// Config sets the limits of a Limiter. Zero fields take the defaults.
type Config struct {
	// MaxInFlight is how many requests execute at once (default 256).
	MaxInFlight int
	// MaxQueue is how many requests may wait for a slot (default 1024);
	// a request beyond that is rejected at once. Negative: no waiting,
	// a request that finds no free slot is rejected at once.
	MaxQueue int
	// QueueTimeout is the longest a request waits for a slot before it
	// is rejected (default 2s).
	QueueTimeout time.Duration
	// Exempt are path prefixes never limited. A prefix matches the path
	// itself and paths below it: "/status" matches "/status" and
	// "/status/x" but not "/statusx"; a prefix ending in "/" matches
	// everything under it. Nil means DefaultExempt; an empty non-nil
	// slice exempts nothing.
	Exempt []string
	// RetryAfter is the Retry-After of rejections in seconds (default 1).
	RetryAfter int
	// Subsystem names the metrics: mure_<Subsystem>_in_flight and so on
	// (default "admission"), so that two Limiters can share a registry.
	Subsystem string
}

func (c Config) withDefaults() Config {
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	switch {
	case c.MaxQueue == 0:
		c.MaxQueue = DefaultMaxQueue
	case c.MaxQueue < 0:
		c.MaxQueue = 0
	}
	if c.QueueTimeout <= 0 {
		c.QueueTimeout = DefaultQueueTimeout
	}
	if c.Exempt == nil {
		c.Exempt = DefaultExempt
	}
	c.Exempt = append([]string(nil), c.Exempt...)
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.Subsystem == "" {
		c.Subsystem = "admission"
	}
	return c
}

// Limiter is the admission control of a node's client API. One Limiter
// may wrap several handlers; they then share its slots and queue.
type Limiter struct {
	cfg     Config
	slots   chan struct{} // a value in the buffer is a slot in use
	waiting atomic.Int64  // requests waiting for a slot, ≤ cfg.MaxQueue
	timers  sync.Pool     // *time.Timer, stopped
	m       metrics
}

// New returns a Limiter with cfg's limits (zero fields take the
// defaults). Its metrics are registered with reg unless reg is nil;
// registering two Limiters with one registry panics.
func New(cfg Config, reg prometheus.Registerer) *Limiter {
	cfg = cfg.withDefaults()
	l := &Limiter{cfg: cfg, slots: make(chan struct{}, cfg.MaxInFlight)}
	l.m = newMetrics(l, reg)
	return l
}

// Config returns the limits in effect, defaults filled in.
func (l *Limiter) Config() Config {
	c := l.cfg
	c.Exempt = append([]string(nil), c.Exempt...)
	return c
}

// Stats returns how many requests execute and how many wait right now.
func (l *Limiter) Stats() (inFlight, queued int) {
	return len(l.slots), int(l.waiting.Load())
}

// Wrap limits next. Exempt paths go straight to next.
func (l *Limiter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.exempt(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if !l.acquire(w, r) {
			return
		}
		defer l.release() // also when next panics (http.ErrAbortHandler)
		next.ServeHTTP(w, r)
	})
}

func (l *Limiter) exempt(path string) bool {
	for _, p := range l.cfg.Exempt {
		if strings.HasPrefix(path, p) &&
			(len(path) == len(p) || strings.HasSuffix(p, "/") || path[len(p)] == '/') {
			return true
		}
	}
	return false
}

// acquire takes a slot, waiting if need be. When it returns false the
// request has been answered (or its client is gone) and must not run.
func (l *Limiter) acquire(w http.ResponseWriter, r *http.Request) bool {
	err := l.Acquire(r.Context())
	if errors.Is(err, ErrOverloaded) {
		l.reject(w)
	}
	return err == nil
}

// ErrOverloaded is the refusal of a request that found every slot taken
// and the waiting room full, or whose wait ran out.
var ErrOverloaded = errors.New(CodeOverloaded)

// OverloadedError is the refusal Acquire returns: how loaded the node was
// and when to retry. It wraps ErrOverloaded.
type OverloadedError struct {
	InFlight, Queued int
	// RetryAfter is when to retry, in seconds (Config.RetryAfter).
	RetryAfter int
}

func (e *OverloadedError) Error() string {
	return fmt.Sprintf("this node is at capacity (%d requests in flight, %d waiting); retry after %d s or use another node", e.InFlight, e.Queued, e.RetryAfter)
}

func (e *OverloadedError) Unwrap() error { return ErrOverloaded }

// RetryAfterSeconds is RetryAfter, for faces that read it through an
// interface of their own.
func (e *OverloadedError) RetryAfterSeconds() int { return e.RetryAfter }

// Acquire takes a slot as Wrap does (waiting in the waiting room for at
// most QueueTimeout), for a face that answers requests in its own format
// (the S3 API's errors are XML). It returns nil with the slot taken (give
// it back with Release), an *OverloadedError when the request is refused,
// or ctx's error when the caller left while it waited.
func (l *Limiter) Acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		l.m.wait.Observe(0)
		return nil
	default:
	}
	// Take a place in the waiting room, if there is one.
	for {
		n := l.waiting.Load()
		if n >= int64(l.cfg.MaxQueue) {
			l.m.queueFull.Inc()
			return l.overloaded()
		}
		if l.waiting.CompareAndSwap(n, n+1) {
			break
		}
	}
	start := time.Now()
	t, _ := l.timers.Get().(*time.Timer)
	if t == nil {
		t = time.NewTimer(l.cfg.QueueTimeout)
	} else {
		t.Reset(l.cfg.QueueTimeout)
	}
	var err error
	select {
	case l.slots <- struct{}{}:
	case <-t.C:
		err = errTimedOut
	case <-ctx.Done():
		err = ctx.Err() // the client is gone: nobody to answer
	}
	l.waiting.Add(-1)
	t.Stop() // Go ≥ 1.23: no stale tick survives Stop, so the timer can be reused
	l.timers.Put(t)
	switch err {
	case nil:
		l.m.wait.Observe(time.Since(start).Seconds())
	case errTimedOut:
		l.m.timeout.Inc()
		return l.overloaded()
	}
	return err
}

var errTimedOut = errors.New("timed out")

func (l *Limiter) overloaded() error {
	inFlight, queued := l.Stats()
	return &OverloadedError{InFlight: inFlight, Queued: queued, RetryAfter: l.cfg.RetryAfter}
}

func (l *Limiter) release() { <-l.slots }

// Release gives back a slot Acquire took.
func (l *Limiter) Release() { l.release() }

func (l *Limiter) reject(w http.ResponseWriter) {
	api.Unavailable(w, l.cfg.RetryAfter, CodeOverloaded, l.overloaded().Error())
}
