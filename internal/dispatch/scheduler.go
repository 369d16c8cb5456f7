package dispatch

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// Keys of Scheduler.Decisions besides the policies' names.
const (
	// DecisionAffinity counts connections sent by the affinity table.
	DecisionAffinity = "affinity"
	// DecisionNone counts connections no node could take.
	DecisionNone = "none"
)

// Config configures a Scheduler.
type Config struct {
	// Policy chooses among the nodes (nil: round robin).
	Policy Policy
	// MaxAge excludes a node whose last report arrived longer ago than this
	// (0: no limit). Membership declares a silent node dead in seconds;
	// MaxAge also catches a node whose gossip lives but whose load reporter
	// has stopped. Too short, and a delayed report makes a healthy node
	// skip turns.
	MaxAge time.Duration
	// Affinity, when set, is consulted before the policy and told of every
	// decision (nil: no affinity).
	Affinity *Affinity
	// ConnectLag is how long a connection may take to show in its node's
	// figures after the decision: with redirects, the client's next round
	// trip. Assignments made later than a report's time less ConnectLag are
	// still counted after that report (default DefaultConnectLag).
	ConnectLag time.Duration
	// Now is the clock (nil: time.Now); tests pass a fake one.
	Now func() time.Time
}

// DefaultConnectLag is Config.ConnectLag's default.
const DefaultConnectLag = 20 * time.Millisecond

// maxRecent bounds the assignment times kept per node.
const maxRecent = 4096

// Scheduler owns the dispatcher's view of the nodes: their latest reports,
// its own assignments since each report, the policy, and how many decisions
// each policy made. It is safe for concurrent use.
type Scheduler struct {
	maxAge   time.Duration
	lag      time.Duration
	affinity *Affinity
	now      func() time.Time

	mu        sync.Mutex
	policy    Policy
	nodes     map[string]*node
	ids       []string   // sorted keys of nodes
	view      []NodeLoad // reused by Choose, in ids order
	decisions map[string]uint64
	seq       uint64 // decisions made
}

// node is a NodeLoad with when its report arrived, by our clock (the
// node's At is by its own clock, which may be skewed), and when the
// assignments not yet covered by a report were made (oldest first;
// len(recent) == Assigned).
type node struct {
	NodeLoad
	received time.Time
	recent   []time.Time
}

// NewScheduler returns a scheduler that knows no node yet.
func NewScheduler(cfg Config) *Scheduler {
	if cfg.Policy == nil {
		cfg.Policy = &RoundRobin{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ConnectLag == 0 {
		cfg.ConnectLag = DefaultConnectLag
	}
	return &Scheduler{
		maxAge:    cfg.MaxAge,
		lag:       cfg.ConnectLag,
		affinity:  cfg.Affinity,
		now:       cfg.Now,
		policy:    cfg.Policy,
		nodes:     make(map[string]*node),
		decisions: make(map[string]uint64),
	}
}

// Choose picks the node for a new connection and counts it as assigned to
// that node until the node's next report. It returns ok=false when no node
// is alive and fresh.
func (s *Scheduler) Choose(c Conn) (NodeLoad, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.affinity != nil {
		id, ok := s.affinity.Lookup(c, func(id string) bool { return s.eligible(id, now) })
		if ok {
			return s.assign(c, id, DecisionAffinity), true
		}
	}
	s.view = s.view[:0]
	for _, id := range s.ids {
		n := s.nodes[id].NodeLoad
		n.Alive = s.eligible(id, now)
		s.view = append(s.view, n)
	}
	id, ok := s.policy.Choose(c, s.view)
	if !ok || !s.eligible(id, now) {
		s.decisions[DecisionNone]++
		return NodeLoad{}, false
	}
	return s.assign(c, id, s.policy.Name()), true
}

// eligible reports whether node id may be chosen: known, alive and fresh.
func (s *Scheduler) eligible(id string, now time.Time) bool {
	n, ok := s.nodes[id]
	if !ok || !n.Alive {
		return false
	}
	return s.maxAge <= 0 || now.Sub(n.received) <= s.maxAge
}

func (s *Scheduler) assign(c Conn, id, decision string) NodeLoad {
	n := s.nodes[id]
	if len(n.recent) >= maxRecent {
		n.recent = n.recent[1:]
	}
	n.recent = append(n.recent, s.now())
	n.Assigned = len(n.recent)
	s.seq++
	n.LastChosen = s.seq
	s.decisions[decision]++
	if s.affinity != nil {
		s.affinity.Remember(c, id)
	}
	return n.NodeLoad
}

// Report records a node's new figures. The report is taken to include the
// connections assigned before its time At less ConnectLag; those assigned
// since stay counted in Assigned. A report older (by At) than the one held
// is ignored, since gossip may deliver out of order.
func (s *Scheduler) Report(n NodeLoad) {
	if n.ID == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.nodes[n.ID]
	if ok && n.At.Before(old.At) {
		return
	}
	now := s.now()
	var recent []time.Time
	if ok {
		at := n.At
		if at.After(now) {
			at = now // a clock ahead of ours
		}
		covered := at.Add(-s.lag)
		i := 0
		for i < len(old.recent) && !old.recent[i].After(covered) {
			i++
		}
		recent = old.recent[i:]
		n.LastChosen, n.Covered = old.LastChosen, i
	} else {
		i, _ := slices.BinarySearch(s.ids, n.ID)
		s.ids = slices.Insert(s.ids, i, n.ID)
	}
	n.Assigned = len(recent)
	s.nodes[n.ID] = &node{NodeLoad: n, received: now, recent: recent}
}

// Done tells the scheduler that a connection it sent to node id has
// finished, when the hand-over mode lets it know (proxy does, redirect
// does not). It undoes one assignment not yet covered by a report.
func (s *Scheduler) Done(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.nodes[id]; ok && len(n.recent) > 0 {
		n.recent = n.recent[1:]
		n.Assigned = len(n.recent)
	}
}

// Remove forgets a node that left the cluster or was declared dead.
func (s *Scheduler) Remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.nodes[id]; !ok {
		return
	}
	delete(s.nodes, id)
	if i, ok := slices.BinarySearch(s.ids, id); ok {
		s.ids = slices.Delete(s.ids, i, i+1)
	}
}

// SetPolicy replaces the policy; decision counts of earlier ones are kept.
func (s *Scheduler) SetPolicy(p Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy = p
}

// PolicyName returns the current policy's name.
func (s *Scheduler) PolicyName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policy.Name()
}

// Nodes returns the nodes' latest figures with their Assigned counts, by ID.
func (s *Scheduler) Nodes() []NodeLoad {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]NodeLoad, 0, len(s.ids))
	for _, id := range s.ids {
		out = append(out, s.nodes[id].NodeLoad)
	}
	return out
}

// Decisions returns how many connections each policy (by name), the
// affinity table (DecisionAffinity) and no node at all (DecisionNone)
// accounted for.
func (s *Scheduler) Decisions() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.decisions)
}
