package bench

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// recorder collects the outcomes of the measured requests of one run. It is
// safe for concurrent use; the counters can be read while it records
// (progress line).
type recorder struct {
	requests, ok, errs, dropped, bytes atomic.Int64

	mu    sync.Mutex
	hist  *hdrhistogram.Histogram
	kinds map[string]int64
	last  time.Time // latest completion
}

func newRecorder() *recorder {
	return &recorder{hist: newHistogram(), kinds: map[string]int64{}}
}

// issue counts a request sent.
func (r *recorder) issue() { r.requests.Add(1) }

// drop counts a request not sent because too many were outstanding.
func (r *recorder) drop() { r.dropped.Add(1) }

// done records a completed request: its latency, payload bytes and error.
func (r *recorder) done(lat time.Duration, n int64, err error, at time.Time) {
	if err == nil {
		r.ok.Add(1)
		r.bytes.Add(n)
	} else {
		r.errs.Add(1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		recordLatency(r.hist, lat)
	} else {
		r.kinds[ErrorKind(err)]++
	}
	if at.After(r.last) {
		r.last = at
	}
}

// result builds the Result of a run whose measured phase began at start.
// With nothing completed, the elapsed time is the time until end.
func (r *recorder) result(start, end time.Time) *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	stop := r.last
	if stop.IsZero() {
		stop = end
	}
	res := &Result{
		Requests: r.requests.Load(),
		OK:       r.ok.Load(),
		Errors:   r.errs.Load(),
		Dropped:  r.dropped.Load(),
		Bytes:    r.bytes.Load(),
		Elapsed:  max(stop.Sub(start), 0).Seconds(),
		Latency:  summarize(r.hist),
		hist:     r.hist,
	}
	if len(r.kinds) > 0 {
		res.ErrorKinds = make(map[string]int64, len(r.kinds))
		for k, v := range r.kinds {
			res.ErrorKinds[k] = v
		}
	}
	if res.Elapsed > 0 {
		res.OpsPerSec = float64(res.OK) / res.Elapsed
		res.MBPerSec = float64(res.Bytes) / MB / res.Elapsed
	}
	return res
}
