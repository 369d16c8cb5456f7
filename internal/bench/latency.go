package bench

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The latency histogram records microseconds from 1µs to 60s with 3
// significant digits; values outside the range are clamped to it.
const (
	histMin     = 1                // µs
	histMax     = 60 * 1000 * 1000 // µs (60 s)
	histSigFigs = 3
)

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMin, histMax, histSigFigs)
}

// recordLatency adds d to h, clamped to the histogram's range.
func recordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	us := d.Microseconds()
	us = max(us, histMin)
	us = min(us, histMax)
	_ = h.RecordValue(us) // cannot fail: us is in range
}

// Latency summarizes a latency distribution, in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
}

// summarize reads the percentiles of h (zero for an empty histogram).
func summarize(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	q := h.ValueAtPercentilesSlice([]float64{50, 90, 99, 99.9})
	return Latency{
		Count: h.TotalCount(),
		Mean:  h.Mean() / 1000,
		P50:   ms(q[0]),
		P90:   ms(q[1]),
		P99:   ms(q[2]),
		P999:  ms(q[3]),
		Max:   ms(h.Max()),
	}
}

// mergeHistograms returns a new histogram holding the values of all hs.
func mergeHistograms(hs ...*hdrhistogram.Histogram) *hdrhistogram.Histogram {
	m := newHistogram()
	for _, h := range hs {
		if h != nil {
			m.Merge(h)
		}
	}
	return m
}
