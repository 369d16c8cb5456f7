package bench

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestPercentilesMonotone(t *testing.T) {
	h := newHistogram()
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		// log-normal-ish: mostly ~1ms, a tail to seconds
		recordLatency(h, time.Duration(r.ExpFloat64()*r.ExpFloat64()*float64(time.Millisecond)))
	}
	recordLatency(h, 0)              // clamped to 1µs
	recordLatency(h, 10*time.Minute) // clamped to 60s
	l := summarize(h)
	if l.Count != 10002 {
		t.Fatalf("count %d", l.Count)
	}
	seq := []float64{l.P50, l.P90, l.P99, l.P999, l.Max}
	for i := 1; i < len(seq); i++ {
		if seq[i] < seq[i-1] {
			t.Fatalf("not monotone: %+v", l)
		}
	}
	if l.P50 <= 0 || l.Max < 59_000 || l.Max > 61_000 {
		t.Fatalf("%+v", l)
	}
	if summarize(nil) != (Latency{}) || summarize(newHistogram()) != (Latency{}) {
		t.Fatal("empty histogram not zero")
	}
}

func TestPercentilesAccurate(t *testing.T) {
	h := newHistogram()
	for i := 1; i <= 1000; i++ {
		recordLatency(h, time.Duration(i)*time.Millisecond)
	}
	l := summarize(h)
	near := func(got, want float64) bool { return got >= want*0.999 && got <= want*1.002 }
	if !near(l.P50, 500) || !near(l.P90, 900) || !near(l.P99, 990) || !near(l.P999, 999) || !near(l.Max, 1000) {
		t.Fatalf("%+v", l)
	}
	m := mergeHistograms(h, h, nil)
	if m.TotalCount() != 2000 || summarize(m).P50 != l.P50 {
		t.Fatalf("merge: %d %+v", m.TotalCount(), summarize(m))
	}
}
