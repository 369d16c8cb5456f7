package dsc

import (
	"maps"
	"testing"
	"time"
)

func TestLoadsFrom(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	sample := func(ms int, a, b uint64) placedAt {
		p := placedAt{at: t0.Add(time.Duration(ms) * time.Millisecond)}
		p.placed[0], p.placed[1] = a, b
		return p
	}
	// Samples every 50 ms: node a got 2, 5 then 9 placements; b 0, 1, 1.
	hist := []placedAt{sample(0, 2, 0), sample(50, 5, 1), sample(100, 9, 1)}
	ranks := map[string]int{"a": 0, "b": 1, "c": 2}
	report := func(conns map[string]int, at map[string]time.Time) []Node {
		var out []Node
		for _, id := range []string{"a", "b", "c"} {
			out = append(out, Node{ID: id, Connections: conns[id], At: at[id]})
		}
		return out
	}
	at80 := t0.Add(80 * time.Millisecond)
	for _, tc := range []struct {
		name  string
		nodes []Node
		want  map[int]int64
	}{
		{"reports after the second sample", report(map[string]int{"a": 7, "b": 3}, map[string]time.Time{"a": at80, "b": at80}),
			// base: the 50 ms sample (≤ 80-20 ms): a 7-5, b 3-1; c has no report: 0 from the latest sample
			map[int]int64{0: 2, 1: 2, 2: 0}},
		{"a report within the connect lag of a sample counts the sample before", report(map[string]int{"a": 7}, map[string]time.Time{"a": t0.Add(60 * time.Millisecond)}),
			map[int]int64{0: 5, 1: -1, 2: 0}},
		{"a report older than the samples", report(map[string]int{"a": 4}, map[string]time.Time{"a": t0.Add(-time.Second)}),
			map[int]int64{0: 2, 1: -1, 2: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := loadsFrom(hist, tc.nodes, ranks); !maps.Equal(got, tc.want) {
				t.Fatalf("loads %v, want %v", got, tc.want)
			}
		})
	}
	if got := loadsFrom(nil, nil, ranks); len(got) != 0 {
		t.Fatalf("no samples: %v", got)
	}
}
