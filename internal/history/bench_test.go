package history

import (
	"encoding/json"
	"strconv"
	"testing"
)

// BenchmarkSecond is one second of a node's history work in a cluster of
// 64 nodes: a point added to each node's series (its own sample and the
// peers' pulled ones).
func BenchmarkSecond(b *testing.B) {
	s := NewSet(64)
	for i := range 64 {
		s.Series(strconv.Itoa(i))
	}
	p := pt(0, 0.5)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.T = int64(i)
		for n := range 64 {
			s.Series(strconv.Itoa(n)).Add(p)
		}
	}
}

// BenchmarkDumpFull encodes a full hour and day of 3 nodes: what a
// dashboard gets when it opens and a restarted node asks of a peer.
func BenchmarkDumpFull(b *testing.B) {
	s := NewSet(0)
	for _, id := range []string{"a", "b", "c"} {
		se := s.Series(id)
		for ts := int64(0); ts < 25*3600; ts++ {
			se.Add(pt(ts, 0.123456))
		}
	}
	var size int
	b.ReportAllocs()
	for b.Loop() {
		out, err := json.Marshal(s.Dump(0))
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	b.ReportMetric(float64(size), "bytes/dump")
}
