package files

import (
	"slices"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
)

func TestReadOrder(t *testing.T) {
	ld := func(cpu float64, conns int) *cluster.Load { return &cluster.Load{CPU: cpu, Connections: conns} }
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	for _, tc := range []struct {
		name    string
		zone    string
		holders []holder
		want    []string
	}{
		{"local copy first, even loaded and in another zone", "a",
			[]holder{{id: "n1", zone: "a", alive: true, load: ld(0, 0)}, {id: "n9", zone: "b", local: true, alive: true, load: ld(0.99, 50)}},
			[]string{"n9", "n1"}},
		{"same zone before a less loaded holder elsewhere", "a",
			[]holder{{id: "n1", zone: "b", alive: true, load: ld(0.01, 0)}, {id: "n2", zone: "a", alive: true, load: ld(0.9, 40)}},
			[]string{"n2", "n1"}},
		{"least CPU among the same zone", "a",
			[]holder{{id: "n1", zone: "a", alive: true, load: ld(0.5, 0)}, {id: "n2", zone: "a", alive: true, load: ld(0.2, 9)}, {id: "n3", zone: "b", alive: true, load: ld(0, 0)}},
			[]string{"n2", "n1", "n3"}},
		{"no zone on the reader: by load", "",
			[]holder{{id: "n1", zone: "a", alive: true, load: ld(0.7, 0)}, {id: "n2", zone: "", alive: true, load: ld(0.3, 0)}},
			[]string{"n2", "n1"}},
		{"holders without a zone never match a reader without one", "",
			[]holder{{id: "n2", alive: true, load: ld(0.6, 0)}, {id: "n1", alive: true, load: ld(0.4, 0)}},
			[]string{"n1", "n2"}},
		{"CPU within a percent: fewer connections win", "",
			[]holder{{id: "n1", alive: true, load: ld(0.301, 7)}, {id: "n2", alive: true, load: ld(0.298, 3)}},
			[]string{"n2", "n1"}},
		{"figures before no figures", "",
			[]holder{{id: "n1", alive: true}, {id: "n2", alive: true, load: ld(0.95, 100)}},
			[]string{"n2", "n1"}},
		{"no figures at all: stable by ID", "a",
			[]holder{{id: "n3", alive: true}, {id: "n1", alive: true}, {id: "n2", alive: true}},
			[]string{"n1", "n2", "n3"}},
		{"not seen alive last, even in the same zone and idle", "a",
			[]holder{{id: "n1", zone: "a", load: ld(0, 0)}, {id: "n2", zone: "b", alive: true, load: ld(0.9, 9)}},
			[]string{"n2", "n1"}},
		{"several not alive: by ID", "a",
			[]holder{{id: "n5", zone: "a"}, {id: "n4", zone: "b", load: ld(0, 0)}},
			[]string{"n4", "n5"}},
		{"the write right's holder after the local copy, before the same zone", "a",
			[]holder{{id: "n1", zone: "a", alive: true, load: ld(0, 0)}, {id: "n2", zone: "b", writer: true, alive: true, load: ld(0.9, 9)}, {id: "n3", local: true, alive: true}},
			[]string{"n3", "n2", "n1"}},
		{"a write right's holder not seen alive is a last resort", "a",
			[]holder{{id: "n1", zone: "b", writer: true}, {id: "n2", zone: "b", alive: true}},
			[]string{"n2", "n1"}},
		{"same zone before a nearer holder elsewhere", "a",
			[]holder{{id: "n1", zone: "b", alive: true, rtt: ms(0.2), load: ld(0, 0)}, {id: "n2", zone: "a", alive: true, rtt: ms(30), load: ld(0.9, 9)}},
			[]string{"n2", "n1"}},
		{"nearer by round trip before less loaded, in one zone", "a",
			[]holder{{id: "n1", zone: "a", alive: true, rtt: ms(12), load: ld(0, 0)}, {id: "n2", zone: "a", alive: true, rtt: ms(0.4), load: ld(0.9, 40)}},
			[]string{"n2", "n1"}},
		{"nearer by round trip before less loaded, no zones", "",
			[]holder{{id: "n1", alive: true, rtt: ms(25), load: ld(0, 0)}, {id: "n2", alive: true, rtt: ms(3), load: ld(0.8, 5)}, {id: "n3", alive: true, rtt: ms(9), load: ld(0.1, 0)}},
			[]string{"n2", "n3", "n1"}},
		{"round trips in one class: the load decides", "a",
			[]holder{{id: "n1", zone: "a", alive: true, rtt: ms(0.3), load: ld(0.5, 0)}, {id: "n2", zone: "a", alive: true, rtt: ms(0.9), load: ld(0.1, 0)}},
			[]string{"n2", "n1"}},
		{"classes double: 1.9 ms is nearer than 2.1 ms, 5 ms as near as 7 ms", "",
			[]holder{{id: "n1", alive: true, rtt: ms(2.1), load: ld(0, 0)}, {id: "n2", alive: true, rtt: ms(1.9), load: ld(0.9, 0)},
				{id: "n3", alive: true, rtt: ms(7), load: ld(0.1, 0)}, {id: "n4", alive: true, rtt: ms(5), load: ld(0.2, 0)}},
			[]string{"n2", "n1", "n3", "n4"}},
		{"measured before not measured", "",
			[]holder{{id: "n1", alive: true, load: ld(0, 0)}, {id: "n2", alive: true, rtt: ms(40), load: ld(0.9, 9)}},
			[]string{"n2", "n1"}},
		{"the write right's holder before a nearer holder", "",
			[]holder{{id: "n1", alive: true, rtt: ms(0.1), load: ld(0, 0)}, {id: "n2", writer: true, alive: true, rtt: ms(50)}},
			[]string{"n2", "n1"}},
		{"not seen alive last, even the nearest", "",
			[]holder{{id: "n1", rtt: ms(0.1), load: ld(0, 0)}, {id: "n2", alive: true, rtt: ms(80), load: ld(0.9, 9)}},
			[]string{"n2", "n1"}},
		{"none", "a", nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.holders)
			got := []string{}
			for _, h := range readOrder(tc.zone, tc.holders) {
				got = append(got, h.id)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("readOrder = %v, want %v", got, tc.want)
			}
			if !slices.EqualFunc(in, tc.holders, func(a, b holder) bool { return a.id == b.id }) {
				t.Fatal("readOrder reordered its argument")
			}
		})
	}
}

func TestReadChoiceReason(t *testing.T) {
	for _, tc := range []struct {
		zone string
		h    holder
		want string
	}{
		{"a", holder{local: true, alive: true}, "local copy"},
		{"a", holder{zone: "a"}, "not seen alive"},
		{"a", holder{zone: "b", writer: true, alive: true}, "holds the write right (its reads count toward resuming replication)"},
		{"a", holder{zone: "a", alive: true, load: &cluster.Load{CPU: 0.12, Connections: 3}}, "same zone a, cpu 12% conns 3"},
		{"a", holder{zone: "b", alive: true}, "other zone, no load figures yet"},
		{"", holder{zone: "b", alive: true, load: &cluster.Load{}}, "no zone to match, cpu 0% conns 0"},
		{"a", holder{zone: "a", alive: true, rtt: 1234 * time.Microsecond, load: &cluster.Load{CPU: 0.12, Connections: 3}}, "same zone a, rtt 1.23ms, cpu 12% conns 3"},
		{"a", holder{zone: "b", alive: true, rtt: 250 * time.Microsecond}, "other zone, rtt 250µs, no load figures yet"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.h.reason(tc.zone); got != tc.want {
				t.Fatalf("reason = %q, want %q", got, tc.want)
			}
		})
	}
}
