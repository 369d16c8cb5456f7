package dsc

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func client(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("10.77.0.101"), uint16(40000+i))
}

func TestSYNTable(t *testing.T) {
	const ttl = 3 * time.Second
	// A step acts on the table; want is what Lookup(client(c)) must give
	// afterwards ("" for absent), and wantLen the table's length.
	type step struct {
		do      func(tb *SYNTable, clk *fakeClock)
		c       int
		want    string
		wantLen int
	}
	remember := func(c int, node string) func(*SYNTable, *fakeClock) {
		return func(tb *SYNTable, _ *fakeClock) { tb.Remember(client(c), node) }
	}
	advance := func(d time.Duration) func(*SYNTable, *fakeClock) {
		return func(_ *SYNTable, clk *fakeClock) { clk.advance(d) }
	}
	rebuild := func(m map[string][]netip.AddrPort) func(*SYNTable, *fakeClock) {
		return func(tb *SYNTable, _ *fakeClock) { tb.Rebuild(m) }
	}
	tests := []struct {
		name  string
		max   int
		steps []step
	}{
		{"same client within ttl", 8, []step{
			{remember(1, "n1"), 1, "n1", 1},
			{advance(ttl - time.Millisecond), 1, "n1", 1},
		}},
		{"gone after ttl", 8, []step{
			{remember(1, "n1"), 1, "n1", 1},
			{advance(ttl), 1, "", 0},
		}},
		{"remember restarts ttl", 8, []step{
			{remember(1, "n1"), 1, "n1", 1},
			{advance(2 * time.Second), 1, "n1", 1},
			{remember(1, "n2"), 1, "n2", 1},
			{advance(2 * time.Second), 1, "n2", 1},
		}},
		{"oldest evicted at max", 2, []step{
			{remember(1, "n1"), 1, "n1", 1},
			{remember(2, "n2"), 2, "n2", 2},
			{remember(1, "n1"), 1, "n1", 2}, // refreshed: now client 2 is oldest
			{remember(3, "n3"), 2, "", 2},
			{nil, 1, "n1", 2},
			{nil, 3, "n3", 2},
		}},
		{"rebuild replaces", 8, []step{
			{remember(1, "n1"), 1, "n1", 1},
			{rebuild(map[string][]netip.AddrPort{"n2": {client(2)}, "n3": {client(3), client(4)}}), 1, "", 3},
			{nil, 2, "n2", 3},
			{nil, 4, "n3", 3},
		}},
		{"retransmission after rebuild", 8, []step{
			{remember(1, "n1"), 1, "n1", 1}, // the old master's choice, now lost
			{rebuild(map[string][]netip.AddrPort{"n2": {client(1)}}), 1, "n2", 1},
			{advance(ttl - time.Millisecond), 1, "n2", 1},
			{advance(time.Millisecond), 1, "", 0},
		}},
		{"rebuild beyond max", 2, []step{
			{rebuild(map[string][]netip.AddrPort{"a": {client(1)}, "b": {client(2), client(3)}}), 1, "", 2},
			{nil, 3, "b", 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Unix(1_000_000, 0)}
			tb := NewSYNTable(ttl, tt.max, clk.now)
			for i, s := range tt.steps {
				if s.do != nil {
					s.do(tb, clk)
				}
				node, ok := tb.Lookup(client(s.c))
				if node != s.want || ok != (s.want != "") {
					t.Errorf("step %d: Lookup(client %d) = %q, %v; want %q", i, s.c, node, ok, s.want)
				}
				if n := tb.Len(); n != s.wantLen {
					t.Errorf("step %d: Len = %d, want %d", i, n, s.wantLen)
				}
			}
		})
	}
}

// TestSYNTableConcurrent gives the race detector something to look at.
func TestSYNTableConcurrent(t *testing.T) {
	tb := NewSYNTable(time.Minute, 64, nil)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				c := client(g*1000 + i)
				tb.Remember(c, fmt.Sprint("n", g))
				tb.Lookup(c)
				if i%50 == 0 {
					tb.Rebuild(map[string][]netip.AddrPort{"n": {c}})
				}
			}
		})
	}
	wg.Wait()
	if n := tb.Len(); n < 1 || n > 64 {
		t.Errorf("Len = %d, want 1..64", n)
	}
}
