package history

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Latency buckets: bucket i holds durations up to bucketBase·growth^i, so
// 64 buckets span 50 µs to about a minute with 25% resolution.
const (
	numBuckets = 64
	bucketBase = 50 * time.Microsecond
	growth     = 1.25
)

// Requests counts a node's answered client requests and their latency
// between two Takes, without locks on the request path.
type Requests struct {
	buckets [numBuckets]atomic.Int64
	errors  atomic.Int64

	mu   sync.Mutex
	last time.Time
}

// Observe records one answered request.
func (r *Requests) Observe(d time.Duration, status int) {
	r.buckets[bucket(d)].Add(1)
	if status >= 500 {
		r.errors.Add(1)
	}
}

func bucket(d time.Duration) int {
	if d <= bucketBase {
		return 0
	}
	i := int(math.Ceil(math.Log(float64(d)/float64(bucketBase)) / math.Log(growth)))
	return min(i, numBuckets-1)
}

// upper returns bucket i's largest duration, in milliseconds.
func upper(i int) float64 {
	return float64(bucketBase) * math.Pow(growth, float64(i)) / float64(time.Millisecond)
}

// Second is what Take returns: requests and errors per second since the
// previous Take, and the latency quantiles of those requests (NaN when
// there were none).
type Second struct {
	Rate, Errors float64
	P50, P99     float64
}

// Take returns the figures since the previous Take (or since the first
// Observe, on the first) and starts over.
func (r *Requests) Take(now time.Time) Second {
	var counts [numBuckets]int64
	var total int64
	for i := range r.buckets {
		counts[i] = r.buckets[i].Swap(0)
		total += counts[i]
	}
	errs := r.errors.Swap(0)
	r.mu.Lock()
	dt := now.Sub(r.last).Seconds()
	if r.last.IsZero() || dt <= 0 {
		dt = 1
	}
	r.last = now
	r.mu.Unlock()
	s := Second{Rate: float64(total) / dt, Errors: float64(errs) / dt, P50: math.NaN(), P99: math.NaN()}
	if total > 0 {
		s.P50, s.P99 = quantile(counts[:], total, 0.5), quantile(counts[:], total, 0.99)
	}
	return s
}

// quantile returns the upper bound of the bucket holding the q-th request.
func quantile(counts []int64, total int64, q float64) float64 {
	rank := int64(math.Ceil(q * float64(total)))
	var seen int64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return upper(i)
		}
	}
	return upper(len(counts) - 1)
}
