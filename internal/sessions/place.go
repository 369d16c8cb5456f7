package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrNoNode: no live node can take the session.
var ErrNoNode = errors.New("no live node can take the session")

// Placer picks the node a session starts on, among live candidates: for
// a new session of a kind placed PlaceAsked the node asked first, then
// the other live nodes; for a restart elsewhere the live nodes, sorted.
// Kinds with another place= policy are placed by load (Decide).
type Placer interface {
	Place(ctx context.Context, k Kind, candidates []string) (string, error)
}

// First places on the first candidate: a new session on the node asked,
// a restart on the live node with the lowest ID.
type First struct{}

// Place implements Placer.
func (First) Place(_ context.Context, _ Kind, candidates []string) (string, error) {
	if len(candidates) == 0 {
		return "", ErrNoNode
	}
	return candidates[0], nil
}

// Decide picks the node for a new session of kind (by name) for user, by
// the kind's place= policy, and counts it in flight until Placed is told
// how it went and the session shows in the records and the node's
// figures. on is a node the client named ("": none); others are the
// cluster's members; figs their latest gossiped figures. Call it on one
// node (the decider: docs/decisions/0033) so that placements in flight
// are counted in one place. Limits (Config.MaxPerNode, MaxPerUser) refuse
// with ErrFull and ErrUserLimit.
func (m *Manager) Decide(ctx context.Context, user, kind, on string, others []string, figs map[string]Figures) (Decision, error) {
	if kind == "" {
		kind = DefaultKind.Name
	}
	k, ok := m.kinds[kind]
	if !ok {
		return Decision{}, fmt.Errorf("%w %q on node %s", ErrUnknownKind, kind, m.cl.NodeID())
	}
	me := m.cl.NodeID()
	var cands []string
	if on != "" {
		k.Place, cands = PlaceAsked, []string{on}
	} else {
		cands = []string{me}
		for _, n := range slices.Sorted(slices.Values(others)) {
			if n != me && m.cl.Alive(n) && !slices.Contains(cands, n) {
				cands = append(cands, n)
			}
		}
	}
	asked := func(c []string) (string, error) { return m.cfg.Placer.Place(ctx, k, c) }
	d, err := m.bal.decide(k, user, me, cands, m.Records(), figs, m.cfg, asked)
	if err != nil {
		return Decision{}, err
	}
	if d.Placement.Policy == PlaceAsked {
		d.Placement = nil // nothing was weighed
	}
	return d, nil
}

// Placed tells the decider how a placement went: the session's ID, or ""
// and why when it did not start.
func (m *Manager) Placed(d Decision, id, why string) {
	seen := false
	if id != "" {
		_, seen = m.Record(id)
	}
	m.bal.placed(d, id, why, seen)
}

// PlacementStatus is the placements this node decided lately and those
// still in flight per node (/status).
func (m *Manager) PlacementStatus() ([]Placed, map[string]int) { return m.bal.status() }

// PlacePolicy returns the place= policy of kind (by name; "" the default
// kind), PlaceAsked for one not offered.
func (m *Manager) PlacePolicy(kind string) string {
	if kind == "" {
		kind = DefaultKind.Name
	}
	if k, ok := m.kinds[kind]; ok && k.Place != "" {
		return k.Place
	}
	return PlaceAsked
}
