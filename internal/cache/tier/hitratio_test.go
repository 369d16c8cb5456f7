package tier

import (
	"container/list"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
	"time"
)

// Issue 22's hit-ratio trace: Zipf (s = 0.9) over 100,000 objects of
// 1–64 KiB (uniform), 1,000,000 requests, the memory tier sized to 10% of
// the catalogue's bytes, no disk tier.
const (
	traceObjects  = 100_000
	traceRequests = 1_000_000
	traceZipfS    = 0.9
	traceMinSize  = 1 << 10
	traceMaxSize  = 64 << 10
	traceShare    = 0.10
	traceOverhead = 512 // the memory tier's per-object weight beside the body
)

// trace is a request sequence (object numbers) and each object's size.
type trace struct {
	reqs  []int32
	sizes []int
	bytes int64 // the catalogue's
}

// zipfTrace draws the trace from a fixed seed. math/rand's Zipf needs
// s > 1, so the sampler inverts the cumulative weights 1/k^s itself;
// popularity ranks are shuffled over the objects, so that size and
// popularity are independent.
func zipfTrace(seed uint64) *trace {
	r := rand.New(rand.NewPCG(seed, 1))
	cdf := make([]float64, traceObjects)
	sum := 0.0
	for k := range traceObjects {
		sum += 1 / math.Pow(float64(k+1), traceZipfS)
		cdf[k] = sum
	}
	rank := r.Perm(traceObjects)
	t := &trace{reqs: make([]int32, traceRequests), sizes: make([]int, traceObjects)}
	for i := range t.sizes {
		t.sizes[i] = traceMinSize + r.IntN(traceMaxSize-traceMinSize+1)
		t.bytes += int64(t.sizes[i])
	}
	for i := range t.reqs {
		k := sort.SearchFloat64s(cdf, r.Float64()*sum)
		t.reqs[i] = int32(rank[min(k, traceObjects-1)])
	}
	return t
}

// ratios are a policy's hit ratios over a trace, in objects and bytes.
type ratios struct{ objects, bytes float64 }

// replayTiers runs the trace through the memory tier itself: a request
// is a hit when Get answers it, else the object is Put.
func replayTiers(tb testing.TB, t *trace, capacity int64) ratios {
	tr, err := Open(Config{MemoryBytes: capacity})
	if err != nil {
		tb.Fatal(err)
	}
	defer tr.Close()
	shared := make([]byte, traceMaxSize) // every body is a slice of it: no memory per object
	var hits, hitBytes, allBytes int64
	for _, n := range t.reqs {
		key := "o" + strconv.Itoa(int(n))
		size := t.sizes[n]
		allBytes += int64(size)
		if vs := tr.Variants(key); len(vs) > 0 {
			if _, err := tr.Get(vs[0]); err == nil {
				hits++
				hitBytes += int64(size)
				continue
			}
		}
		now := time.Unix(1000, 0)
		tr.Put(&Object{Meta: Meta{Key: key, Status: 200, RequestTime: now, ResponseTime: now}, Body: shared[:size]})
	}
	return ratios{float64(hits) / float64(len(t.reqs)), float64(hitBytes) / float64(allBytes)}
}

// replayLRU runs the trace through a least-recently-used cache bounded
// in bytes with the tier's weights (body + 512).
func replayLRU(t *trace, capacity int64) ratios {
	order := list.New()
	where := map[int32]*list.Element{}
	var used, hits, hitBytes, allBytes int64
	for _, n := range t.reqs {
		size := int64(t.sizes[n])
		allBytes += size
		if e, ok := where[n]; ok {
			order.MoveToFront(e)
			hits++
			hitBytes += size
			continue
		}
		where[n] = order.PushFront(n)
		used += size + traceOverhead
		for used > capacity {
			last := order.Back()
			v := last.Value.(int32)
			order.Remove(last)
			delete(where, v)
			used -= int64(t.sizes[v]) + traceOverhead
		}
	}
	return ratios{float64(hits) / float64(len(t.reqs)), float64(hitBytes) / float64(allBytes)}
}

// BenchmarkHitRatio replays issue 22's trace through the memory tier
// (otter's W-TinyLFU, the real tier code) and through LRU of the same
// size, and reports both hit ratios in percent (target: the tier ≥ LRU +
// 5 points). One pass is the measurement:
//
//	go test -run '^$' -bench HitRatio -benchtime 1x ./internal/cache/tier
func BenchmarkHitRatio(b *testing.B) {
	t := zipfTrace(22)
	capacity := int64(float64(t.bytes) * traceShare)
	b.ResetTimer()
	var mure, lru ratios
	for range b.N {
		mure = replayTiers(b, t, capacity)
		lru = replayLRU(t, capacity)
	}
	b.ReportMetric(100*mure.objects, "mure-hit-%")
	b.ReportMetric(100*lru.objects, "lru-hit-%")
	b.ReportMetric(100*mure.bytes, "mure-bytehit-%")
	b.ReportMetric(100*lru.bytes, "lru-bytehit-%")
	b.Logf("catalogue %d objects, %d MiB; memory tier %d MiB; %d requests: tier %.1f%% (bytes %.1f%%), LRU %.1f%% (bytes %.1f%%)",
		traceObjects, t.bytes>>20, capacity>>20, len(t.reqs), 100*mure.objects, 100*mure.bytes, 100*lru.objects, 100*lru.bytes)
}
