package dispatch

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// newScheduler returns a scheduler on a fake clock that knows nodes.
func newScheduler(t *testing.T, p Policy, nodes ...NodeLoad) (*Scheduler, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	s := NewScheduler(Config{Policy: p, Now: clk.Now})
	for _, n := range nodes {
		n.At = clk.Now()
		s.Report(n)
	}
	return s, clk
}

func countChoices(t *testing.T, s *Scheduler, k int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for i := range k {
		n, ok := s.Choose(conn(fmt.Sprintf("192.0.2.%d:%d", i%200+1, 30000+i)))
		if !ok {
			t.Fatalf("choice %d: none", i)
		}
		got[n.ID]++
	}
	return got
}

// TestSchedulerNoHerding: between two reports, least connections spreads a
// burst over equally reported nodes because it counts its own assignments;
// the bare policy on the reported figures alone would send all to one.
func TestSchedulerNoHerding(t *testing.T) {
	nodes := []NodeLoad{up("a", 10, 0.5, 1<<30), up("b", 10, 0.5, 1<<30)}
	for _, p := range []Policy{LeastConnections{}, LeastLoad{}, MostFreeMemory{}, NewPowerOfTwo(rand.New(rand.NewPCG(3, 3)))} {
		t.Run(p.Name(), func(t *testing.T) {
			s, _ := newScheduler(t, p, nodes...)
			got := countChoices(t, s, 100)
			if got["a"] < 40 || got["b"] < 40 {
				t.Fatalf("100 choices split %v, want about 50/50", got)
			}
		})
	}
	t.Run("herding without in-flight counts", func(t *testing.T) {
		got := map[string]int{}
		for range 100 {
			id, _ := LeastConnections{}.Choose(Conn{}, nodes)
			got[id]++
		}
		if got["a"] != 100 {
			t.Fatalf("bare policy split %v; expected the herd this package avoids", got)
		}
	})
	t.Run("least connections exactly even", func(t *testing.T) {
		s, _ := newScheduler(t, LeastConnections{}, nodes...)
		if got := countChoices(t, s, 100); got["a"] != 50 || got["b"] != 50 {
			t.Fatalf("split %v, want 50/50", got)
		}
	})
}

func TestSchedulerReportAndDone(t *testing.T) {
	s, clk := newScheduler(t, LeastConnections{}, up("a", 0, 0, 0), up("b", 3, 0, 0))
	countChoices(t, s, 5) // a to 3, the tie to a, then b: a=4, b=1
	assigned := func() map[string]int {
		m := map[string]int{}
		for _, n := range s.Nodes() {
			m[n.ID] = n.Assigned
		}
		return m
	}
	if got := assigned(); got["a"] != 4 || got["b"] != 1 {
		t.Fatalf("assigned %v, want a=4 b=1", got)
	}
	s.Done("a")
	s.Done("b")
	s.Done("b") // not below zero
	s.Done("nobody")
	if got := assigned(); got["a"] != 3 || got["b"] != 0 {
		t.Fatalf("after Done: assigned %v, want a=3 b=0", got)
	}
	clk.Advance(time.Second)
	s.Report(NodeLoad{ID: "a", Connections: 4, Alive: true, At: clk.Now()})
	if got := assigned(); got["a"] != 0 {
		t.Fatalf("after report: assigned %v, want a=0", got)
	}
	// An older report arriving late is ignored.
	s.Report(NodeLoad{ID: "a", Connections: 99, Alive: true, At: clk.Now().Add(-time.Minute)})
	if n := s.Nodes()[0]; n.Connections != 4 {
		t.Fatalf("stale report applied: %+v", n)
	}
}

func TestSchedulerDeadAndEmpty(t *testing.T) {
	s, clk := newScheduler(t, LeastConnections{})
	if _, ok := s.Choose(conn("192.0.2.1:1")); ok {
		t.Fatal("chose with no nodes")
	}
	s.Report(NodeLoad{ID: "a", Alive: true, At: clk.Now()})
	s.Report(NodeLoad{ID: "b", Connections: 50, Alive: true, At: clk.Now()})
	s.Report(NodeLoad{ID: "a", Alive: false, At: clk.Now()}) // draining
	for i := range 20 {
		if n, ok := s.Choose(conn("192.0.2.1:1")); !ok || n.ID != "b" {
			t.Fatalf("choice %d = %q, %v; want b", i, n.ID, ok)
		}
	}
	s.Remove("b")
	if n, ok := s.Choose(conn("192.0.2.1:1")); ok {
		t.Fatalf("all dead or removed: chose %q", n.ID)
	}
	d := s.Decisions()
	if d[NameLeastConnections] != 20 || d[DecisionNone] != 2 {
		t.Fatalf("decisions %v", d)
	}
}

func TestSchedulerMaxAge(t *testing.T) {
	clk := newFakeClock()
	s := NewScheduler(Config{Policy: LeastConnections{}, MaxAge: 3 * time.Second, Now: clk.Now})
	s.Report(NodeLoad{ID: "a", Alive: true, At: clk.Now()})
	clk.Advance(2 * time.Second)
	s.Report(NodeLoad{ID: "b", Connections: 10, Alive: true, At: clk.Now()})
	if n, _ := s.Choose(Conn{}); n.ID != "a" {
		t.Fatalf("fresh: chose %q, want a", n.ID)
	}
	clk.Advance(2 * time.Second) // a's report is 4 s old, b's 2 s
	if n, _ := s.Choose(Conn{}); n.ID != "b" {
		t.Fatalf("a stale: chose %q, want b", n.ID)
	}
	clk.Advance(2 * time.Second)
	if n, ok := s.Choose(Conn{}); ok {
		t.Fatalf("all stale: chose %q", n.ID)
	}
}

func TestSchedulerDecisionsPerPolicy(t *testing.T) {
	s, _ := newScheduler(t, &RoundRobin{}, up("a", 0, 0, 0), up("b", 0, 0, 0))
	countChoices(t, s, 4)
	s.SetPolicy(StaticHash{})
	if s.PolicyName() != NameStaticHash {
		t.Fatalf("policy %q", s.PolicyName())
	}
	countChoices(t, s, 6)
	d := s.Decisions()
	if d[NameRoundRobin] != 4 || d[NameStaticHash] != 6 {
		t.Fatalf("decisions %v", d)
	}
	d[NameRoundRobin] = 0 // a copy
	if s.Decisions()[NameRoundRobin] != 4 {
		t.Fatal("Decisions returned the scheduler's own map")
	}
}

func TestSchedulerAffinity(t *testing.T) {
	clk := newFakeClock()
	aff := NewAffinity(AffinityConfig{TTL: time.Minute, Capacity: 10, Now: clk.Now})
	s := NewScheduler(Config{Policy: &RoundRobin{}, Affinity: aff, Now: clk.Now})
	for _, id := range []string{"a", "b", "c"} {
		s.Report(NodeLoad{ID: id, Alive: true, At: clk.Now()})
	}
	first, _ := s.Choose(conn("192.0.2.7:40000"))
	other, _ := s.Choose(conn("192.0.2.8:40000"))
	if other.ID == first.ID {
		t.Fatalf("round robin gave both clients %q", first.ID)
	}
	for port := 40001; port < 40010; port++ { // retries come from new ports
		if n, _ := s.Choose(conn(fmt.Sprintf("192.0.2.7:%d", port))); n.ID != first.ID {
			t.Fatalf("port %d went to %q, want %q", port, n.ID, first.ID)
		}
	}
	if d := s.Decisions(); d[DecisionAffinity] != 9 || d[NameRoundRobin] != 2 {
		t.Fatalf("decisions %v", d)
	}
	s.Report(NodeLoad{ID: first.ID, Alive: false, At: clk.Now()})
	if n, ok := s.Choose(conn("192.0.2.7:40011")); !ok || n.ID == first.ID {
		t.Fatalf("node %q dead: client still sent there (%v)", first.ID, ok)
	}
}

// TestSchedulerConcurrent is for -race: choices, reports and completions
// from many goroutines, every choice counted once.
func TestSchedulerConcurrent(t *testing.T) {
	aff := NewAffinity(AffinityConfig{Capacity: 50})
	s := NewScheduler(Config{Policy: NewPowerOfTwo(nil), Affinity: aff})
	ids := []string{"a", "b", "c", "d"}
	for _, id := range ids {
		s.Report(NodeLoad{ID: id, Alive: true, At: time.Now()})
	}
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n, ok := s.Choose(conn(fmt.Sprintf("198.51.100.%d:%d", (w*each+i)%100, 1024+i)))
				if !ok {
					t.Error("no choice")
					return
				}
				if i%3 == 0 {
					s.Done(n.ID)
				}
				if i%10 == 0 {
					s.Report(NodeLoad{ID: ids[i%len(ids)], Connections: i, Alive: true, At: time.Now()})
				}
			}
		}()
	}
	wg.Wait()
	var total uint64
	for _, v := range s.Decisions() {
		total += v
	}
	if total != workers*each {
		t.Fatalf("%d decisions, want %d", total, workers*each)
	}
	if aff.Len() > 50 {
		t.Fatalf("affinity table holds %d, cap 50", aff.Len())
	}
}

// TestSchedulerReportKeepsLaterAssignments: a report covers the
// assignments made before its time (less the connect lag), not those made
// after it was taken, which the node could not see yet.
func TestSchedulerReportKeepsLaterAssignments(t *testing.T) {
	s, clk := newScheduler(t, LeastConnections{}, up("a", 0, 0, 0))
	taken := clk.Now()
	countChoices(t, s, 2) // at the report's time: covered
	clk.Advance(DefaultConnectLag + time.Millisecond)
	countChoices(t, s, 3) // after it: not covered
	clk.Advance(time.Second)
	s.Report(NodeLoad{ID: "a", Connections: 2, Alive: true, At: taken.Add(DefaultConnectLag)})
	if n := s.Nodes()[0]; n.Assigned != 3 {
		t.Fatalf("assigned after a report taken before 3 of 5 assignments = %d, want 3", n.Assigned)
	}
	// A report from a clock ahead of ours covers everything up to now.
	s.Report(NodeLoad{ID: "a", Connections: 5, Alive: true, At: clk.Now().Add(time.Hour)})
	if n := s.Nodes()[0]; n.Assigned != 0 {
		t.Fatalf("assigned after a report from the future = %d, want 0", n.Assigned)
	}
}

// TestSchedulerTiesRotate: when fresh reports make every node equal again,
// the least recently chosen node is next, not always the lowest ID.
func TestSchedulerTiesRotate(t *testing.T) {
	for _, p := range []Policy{LeastConnections{}, LeastLoad{}} {
		t.Run(p.Name(), func(t *testing.T) {
			s, clk := newScheduler(t, p, up("a", 0, 0, 0), up("b", 0, 0, 0), up("c", 0, 0, 0))
			var got []string
			for range 6 {
				n, _ := s.Choose(conn("192.0.2.1:1"))
				got = append(got, n.ID)
				clk.Advance(time.Second)
				for _, id := range []string{"a", "b", "c"} { // equal again
					s.Report(NodeLoad{ID: id, Alive: true, At: clk.Now()})
				}
			}
			if fmt.Sprint(got) != "[a b c a b c]" {
				t.Fatalf("choices %v, want a rotation", got)
			}
		})
	}
}
