package sessions

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// seat is an in-memory Cluster seam: this node and who is alive.
type seat struct {
	id    string
	alive map[string]bool
}

func (s seat) NodeID() string       { return s.id }
func (s seat) Alive(id string) bool { return id == s.id || s.alive[id] }
func (s seat) IsLeader() bool       { return true }
func (s seat) FSM() *meta.FSM       { return nil }
func (seat) ApplyOp(context.Context, meta.Op) (*meta.Result, error) {
	return nil, errors.New("no raft here")
}

// recorder is a Placer that records its candidates and takes the last.
type recorder struct{ got []string }

func (r *recorder) Place(_ context.Context, _ Kind, c []string) (string, error) {
	r.got = slices.Clone(c)
	return c[len(c)-1], nil
}

func TestParsePlace(t *testing.T) {
	k, err := ParseKind("desk shell place=fewest-sessions")
	if err != nil || k.Place != PlaceFewestSessions {
		t.Fatalf("%+v, %v", k, err)
	}
	if _, err := ParseKind("desk shell place=busiest"); err == nil {
		t.Fatal("an unknown policy was accepted")
	}
}

// asked is the PlaceAsked picker of the tests: the first candidate.
func asked(c []string) (string, error) { return c[0], nil }

// TestBalancerBurst: decisions made together, none finished, spread over
// the nodes by what each policy compares (the placements in flight are
// counted), where the reported figures alone would herd onto one node.
func TestBalancerBurst(t *testing.T) {
	cands := []string{"n1", "n2", "n3"}
	now := time.Now()
	// n1 runs four sessions and has 1 GiB free; n2 and n3 none, n2 the
	// most memory, n3 the least CPU.
	var recs []Session
	for i := range 4 {
		recs = append(recs, Session{ID: fmt.Sprint("old", i), User: "u", Node: "n1", State: StateRunning})
	}
	figs := map[string]Figures{
		"n1": {FreeMemory: 1 << 30, CPU: 0.9, At: now},
		"n2": {FreeMemory: 4 << 30, CPU: 0.5, At: now},
		"n3": {FreeMemory: 2 << 30, CPU: 0.1, At: now},
	}
	for _, tc := range []struct {
		policy string
		want   map[string]int // placements per node for a burst of 6
	}{
		{PlaceFewestSessions, map[string]int{"n1": 0, "n2": 3, "n3": 3}},
		// 64 MiB each: n2 keeps the most free for all six.
		{PlaceMostFreeMemory, map[string]int{"n2": 6}},
		{PlaceRoundRobin, map[string]int{"n1": 2, "n2": 2, "n3": 2}},
		// 0.1 each: n3 0.1→0.5 takes five, n2 at 0.5 one.
		{PlaceLeastLoad, map[string]int{"n1": 0, "n2": 1, "n3": 5}},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			b := newBalancer(rand.New(rand.NewPCG(1, 1)))
			k := Kind{Name: "k", Type: TypeShell, Place: tc.policy}
			got := map[string]int{}
			for range 6 {
				d, err := b.decide(k, "u", "n1", cands, recs, figs, Config{}, asked)
				if err != nil {
					t.Fatal(err)
				}
				if d.Placement == nil || d.Placement.Policy != tc.policy || len(d.Placement.Nodes) != 3 {
					t.Fatalf("placement %+v", d.Placement)
				}
				got[d.Node]++
			}
			for n, w := range tc.want {
				if got[n] != w {
					t.Errorf("%s: %v, want %v", tc.policy, got, tc.want)
					break
				}
			}
		})
	}
}

// TestBalancerInFlight: a placement counts until its session shows in the
// records (session counts) or in its node's figures (memory, CPU), and is
// forgotten when it failed.
func TestBalancerInFlight(t *testing.T) {
	b := newBalancer(nil)
	k := Kind{Name: "k", Type: TypeShell, Place: PlaceFewestSessions}
	cands := []string{"a", "b"}
	d, err := b.decide(k, "u", "a", cands, nil, nil, Config{}, asked)
	if err != nil || d.Node != "a" {
		t.Fatalf("%v %v", d, err)
	}
	d2, _ := b.decide(k, "u", "a", cands, nil, nil, Config{}, asked)
	if d2.Node != "b" {
		t.Fatalf("second went to %s: the first in flight was not counted", d2.Node)
	}
	b.placed(d2, "", "failed", false) // failed: b is free again
	b.placed(d, "s1", "", false)
	// s1 not in the records yet: a still counts one.
	d3, _ := b.decide(k, "u", "a", cands, nil, nil, Config{}, asked)
	if d3.Node != "b" {
		t.Fatalf("third went to %s, want b (s1 in flight on a)", d3.Node)
	}
	b.placed(d3, "s3", "", false)
	b.mu.Lock()
	pr, pf, _ := b.pending(time.Now(), map[string]bool{"s1": true, "s3": true},
		map[string]Figures{"a": {At: time.Now().Add(time.Second)}})
	b.mu.Unlock()
	if pr["a"] != 0 || pr["b"] != 0 || pf["a"] != 0 || pf["b"] != 1 {
		t.Fatalf("pending records %v figures %v: want none but b's figures (not reported since)", pr, pf)
	}
	// s3 is killed before b reports again: its record goes, it does not
	// count again.
	b.mu.Lock()
	pr, pf, _ = b.pending(time.Now(), nil, nil)
	b.mu.Unlock()
	if pr["b"] != 0 || pf["b"] != 0 {
		t.Fatalf("a killed session counts in flight again: records %v figures %v", pr, pf)
	}
}

func TestBalancerLimits(t *testing.T) {
	b := newBalancer(nil)
	k := Kind{Name: "k", Type: TypeShell, Place: PlaceFewestSessions}
	recs := []Session{
		{ID: "1", User: "ann", Node: "a", State: StateRunning},
		{ID: "2", User: "ann", Node: "b", State: StateRunning},
		{ID: "3", User: "bob", Node: "a", State: StateRunning},
		{ID: "4", User: "bob", Node: "b", State: StateLost}, // lost: counts for nobody
	}
	_, err := b.decide(k, "ann", "a", []string{"a", "b"}, recs, nil, Config{MaxPerUser: 2}, asked)
	if !errors.Is(err, ErrUserLimit) {
		t.Fatalf("ann's third: %v, want ErrUserLimit", err)
	}
	d, err := b.decide(k, "bob", "a", []string{"a", "b"}, recs, nil, Config{MaxPerNode: 2}, asked)
	if err != nil || d.Node != "b" {
		t.Fatalf("bob's: %v %v, want b (a is full)", d.Node, err)
	}
	_, err = b.decide(k, "bob", "a", []string{"a", "b"}, recs, nil, Config{MaxPerNode: 2}, asked)
	if !errors.Is(err, ErrFull) {
		t.Fatalf("with both full: %v, want ErrFull", err)
	}
	// The node asked, when full, passes the session on.
	ka := Kind{Name: "s", Type: TypeShell}
	d, err = newBalancer(nil).decide(ka, "cy", "a", []string{"a", "b"}, recs[:3], nil, Config{MaxPerNode: 2}, asked)
	if err != nil || d.Node != "b" {
		t.Fatalf("asked of a full node: %v %v, want b", d.Node, err)
	}
}

func TestDecideCandidates(t *testing.T) {
	rec := &recorder{}
	cl := seat{id: "n2", alive: map[string]bool{"n1": true, "n3": true}}
	m, err := NewManager(Config{Placer: rec, HolderCommand: []string{"x"}}, cl)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := m.Kind("shell")
	d, err := m.bal.decide(k, "u", "n2", []string{"n2", "n1", "n3"}, nil, nil, m.cfg, func(c []string) (string, error) {
		return m.cfg.Placer.Place(context.Background(), k, c)
	})
	if err != nil || d.Node != "n3" {
		t.Fatalf("placed on %q (%v)", d.Node, err)
	}
	if want := []string{"n2", "n1", "n3"}; !slices.Equal(rec.got, want) {
		t.Errorf("candidates %v, want %v", rec.got, want)
	}
	if p := m.PlacePolicy("nope"); p != PlaceAsked {
		t.Errorf("an unknown kind's policy: %s", p)
	}
}

// TestBalancerCountsStartingOnce: a session's record is written while it
// starts, before the decider hears how its placement went; the record
// carries the ID the decider chose, so the session counts once toward the
// limits, not as a record and a placement in flight.
func TestBalancerCountsStartingOnce(t *testing.T) {
	b := newBalancer(nil)
	k := Kind{Name: "s", Type: TypeShell}
	lim := Config{MaxPerUser: 2, MaxPerNode: 2}
	d, err := b.decide(k, "ann", "a", []string{"a"}, nil, nil, lim, asked)
	if err != nil || d.ID == "" {
		t.Fatalf("first: %+v %v", d, err)
	}
	// Its record, written by Start before its program starts.
	recs := []Session{{ID: d.ID, User: "ann", Node: "a", State: StateStarting}}
	d2, err := b.decide(k, "ann", "a", []string{"a"}, recs, nil, lim, asked)
	if err != nil {
		t.Fatalf("second, while the first starts: %v (the first counted twice)", err)
	}
	if d2.ID == d.ID {
		t.Fatal("two placements got one ID")
	}
	b.placed(d, d.ID, "", true)
	recs = append(recs, Session{ID: d2.ID, User: "ann", Node: "a", State: StateStarting})
	if _, err := b.decide(k, "ann", "a", []string{"a"}, recs, nil, lim, asked); !errors.Is(err, ErrUserLimit) {
		t.Fatalf("third: %v, want ErrUserLimit", err)
	}
	// The second's start fails: its record goes, and it takes nothing.
	b.placed(d2, "", "did not start", false)
	if _, err := b.decide(k, "ann", "a", []string{"a"}, recs[:1], nil, lim, asked); err != nil {
		t.Fatalf("after a failed start: %v", err)
	}
}
