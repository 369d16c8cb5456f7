package sessions

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/dispatch"
)

// DefaultSessionMemory is the memory a session is assumed to take, until
// its node's next figures show it, when its kind sets no memory limit.
const DefaultSessionMemory = 64 << 20

// flightTTL bounds how long a placement counts as in flight.
const flightTTL = 30 * time.Second

// figuresLag is how much later than a session's start a node's figures
// must be taken to be trusted to show it (clocks differ a little).
const figuresLag = 250 * time.Millisecond

// Figures are a node's gossiped load figures, as placement reads them.
type Figures struct {
	CPU        float64
	RunQueue   float64
	FreeMemory int64
	At         time.Time
}

// NodeFigures is one candidate node as the decider saw it.
type NodeFigures struct {
	Node string `json:"node"`
	// Sessions runs there (records, starting included).
	Sessions int `json:"sessions"`
	// InFlight is the placements there whose session does not show yet in
	// what the policy compares (records, or the node's figures).
	InFlight   int     `json:"in_flight,omitempty"`
	FreeMemory int64   `json:"free_memory_bytes,omitempty"`
	CPU        float64 `json:"cpu,omitempty"`
	RunQueue   float64 `json:"run_queue,omitempty"`
}

// Placement says why a session went where it did: the policy, the node
// that decided, and the figures it used.
type Placement struct {
	Policy  string        `json:"policy"`
	Decider string        `json:"decider"`
	Nodes   []NodeFigures `json:"nodes,omitempty"`
}

// Decision is a placement made and not yet finished: Placed must be
// called with its outcome.
type Decision struct {
	Node string
	// ID is the new session's: chosen here, so that its record, written
	// before its program starts (Start), is known as this placement's
	// and not counted twice while it starts (Origin.ID).
	ID        string
	Placement *Placement
	flight    uint64
}

// flight is one placement in flight.
type flight struct {
	node, user, id, kind string
	why                  *Placement
	begun, done          time.Time
	// seen: its record was seen (a session killed since must not count
	// again when its record goes).
	seen bool
}

// balancer is the decider's state: a policy per kind and the placements
// in flight.
type balancer struct {
	mu       sync.Mutex
	policies map[string]dispatch.Policy
	flights  map[uint64]*flight
	next     uint64
	last     map[string]uint64 // node → sequence number of its last placement
	rnd      *rand.Rand
	recent   []Placed // the latest placements made here, newest last
}

// recentPlacements is how many placements /status shows.
const recentPlacements = 16

// Placed is a placement this node decided, as /status shows it.
type Placed struct {
	Session string    `json:"session,omitempty"`
	Kind    string    `json:"kind"`
	User    string    `json:"user"`
	Node    string    `json:"node"`
	At      time.Time `json:"at"`
	// Error is why the session did not start there ("" if it did).
	Error string `json:"error,omitempty"`
	*Placement
}

func newBalancer(rnd *rand.Rand) *balancer {
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &balancer{policies: map[string]dispatch.Policy{}, flights: map[uint64]*flight{}, last: map[string]uint64{}, rnd: rnd}
}

// pending counts, per node, the placements in flight: those whose record
// does not show yet, and those the node's figures do not cover yet. It
// forgets placements that both show, and those older than flightTTL.
// Call with b.mu held.
func (b *balancer) pending(now time.Time, recorded map[string]bool, figs map[string]Figures) (records, figures map[string]int, users map[string]int) {
	records, figures, users = map[string]int{}, map[string]int{}, map[string]int{}
	for key, f := range b.flights {
		if now.Sub(f.begun) > flightTTL {
			delete(b.flights, key)
			continue
		}
		if f.seen && !recorded[f.id] { // ended since: it takes nothing any more
			if !f.done.IsZero() { // else placed, still to come, says how it went
				delete(b.flights, key)
			}
			continue
		}
		f.seen = f.seen || f.id != "" && recorded[f.id]
		inRecords := !f.seen
		fg, ok := figs[f.node]
		inFigures := f.done.IsZero() || !ok || !fg.At.After(f.done.Add(figuresLag))
		if !inRecords && !inFigures {
			delete(b.flights, key)
			continue
		}
		if inRecords {
			records[f.node]++
			users[f.user]++
		}
		if inFigures {
			figures[f.node]++
		}
	}
	return records, figures, users
}

// decide picks a node for a session of kind k for user among candidates
// (recs: every record; figs: the nodes' figures; lim: the limits) and
// counts it in flight. asked picks among the candidates that may take one
// more for PlaceAsked (Config.Placer).
func (b *balancer) decide(k Kind, user, me string, cands []string, recs []Session, figs map[string]Figures, lim Config,
	asked func([]string) (string, error)) (Decision, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	recorded, perNode, perUser := count(recs, user)
	pendRec, pendFig, pendUser := b.pending(now, recorded, figs)
	if n := perUser + pendUser[user]; lim.MaxPerUser > 0 && n >= lim.MaxPerUser {
		return Decision{}, fmt.Errorf("%w: user %s runs %d sessions, the most a user may run (--session-max-per-user %d); end one with mure session kill ID (mure session ls lists them)",
			ErrUserLimit, user, n, lim.MaxPerUser)
	}
	policy := cmp.Or(k.Place, PlaceAsked)
	pl := &Placement{Policy: policy, Decider: me}
	var view []dispatch.NodeLoad
	for _, n := range cands {
		f := figs[n]
		nf := NodeFigures{Node: n, Sessions: perNode[n], InFlight: pendRec[n], FreeMemory: f.FreeMemory, CPU: f.CPU, RunQueue: f.RunQueue}
		if byFigures(policy) {
			nf.InFlight = pendFig[n]
		}
		full := lim.MaxPerNode > 0 && perNode[n]+pendRec[n] >= lim.MaxPerNode
		view = append(view, dispatch.NodeLoad{ID: n, Connections: perNode[n], Assigned: nf.InFlight, CPU: f.CPU, Load: f.RunQueue,
			FreeMemory: f.FreeMemory, Alive: !full, At: f.At, LastChosen: b.last[n]})
		pl.Nodes = append(pl.Nodes, nf)
	}
	node, ok, err := b.choose(k, policy, view, asked)
	switch {
	case err != nil:
		return Decision{}, err
	case !ok && len(cands) == 0:
		return Decision{}, ErrNoNode
	case !ok:
		return Decision{}, fmt.Errorf("%w: every node that may take it runs its most sessions (--session-max-per-node %d); end some sessions, or add a node",
			ErrFull, lim.MaxPerNode)
	}
	b.next++
	b.last[node] = b.next
	id := newID()
	b.flights[b.next] = &flight{node: node, user: user, id: id, kind: k.Name, why: pl, begun: now}
	return Decision{Node: node, ID: id, Placement: pl, flight: b.next}, nil
}

// count returns the IDs recorded, the sessions per node and user's
// sessions (lost ones count for no node and no user).
func count(recs []Session, user string) (recorded map[string]bool, perNode map[string]int, perUser int) {
	recorded, perNode = make(map[string]bool, len(recs)), map[string]int{}
	for _, r := range recs {
		recorded[r.ID] = true
		if r.State == StateLost {
			continue
		}
		perNode[r.Node]++
		if r.User == user {
			perUser++
		}
	}
	return recorded, perNode, perUser
}

// choose applies policy to the nodes that may take one more (Alive).
func (b *balancer) choose(k Kind, policy string, view []dispatch.NodeLoad, asked func([]string) (string, error)) (string, bool, error) {
	if policy != PlaceAsked {
		node, ok := b.policy(k).Choose(dispatch.Conn{}, view)
		return node, ok, nil
	}
	var open []string
	for _, n := range view {
		if n.Alive {
			open = append(open, n.ID)
		}
	}
	if len(open) == 0 {
		return "", false, nil
	}
	node, err := asked(open)
	return node, err == nil, err
}

// placed records a placement's outcome: a session started (its ID; seen
// when its record shows here already) or not (id "", and why: it no
// longer counts).
func (b *balancer) placed(d Decision, id, why string, seen bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, ok := b.flights[d.flight]
	if !ok {
		return
	}
	if f.why != nil && f.why.Policy != PlaceAsked {
		if len(b.recent) == recentPlacements {
			b.recent = b.recent[1:]
		}
		b.recent = append(b.recent, Placed{Session: id, Kind: f.kind, User: f.user, Node: f.node, At: f.begun.UTC(), Error: why, Placement: f.why})
	}
	if id == "" {
		delete(b.flights, d.flight)
		return
	}
	f.id, f.done, f.seen = id, time.Now(), f.seen || seen
}

// status returns the latest placements and the placements in flight per
// node (as the last decision counted them).
func (b *balancer) status() ([]Placed, map[string]int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fl := map[string]int{}
	for _, f := range b.flights {
		fl[f.node]++
	}
	return slices.Clone(b.recent), fl
}
