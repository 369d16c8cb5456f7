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
// a new session the node asked first, then the other live nodes; for a
// restart elsewhere the live nodes, sorted. Placement by load (paper 004:
// desktops on the node with the fewest sessions, applications on the one
// with the most free memory) is issue 25's; it plugs in here.
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

// PlaceNew picks the node for a new session of kind (by name), with
// Config.Placer: this node first among the candidates, then the other
// live nodes of others.
func (m *Manager) PlaceNew(ctx context.Context, kind string, others []string) (string, error) {
	if kind == "" {
		kind = DefaultKind.Name
	}
	k, ok := m.kinds[kind]
	if !ok {
		return "", fmt.Errorf("%w %q on node %s", ErrUnknownKind, kind, m.cl.NodeID())
	}
	me := m.cl.NodeID()
	cands := []string{me}
	for _, n := range slices.Sorted(slices.Values(others)) {
		if n != me && m.cl.Alive(n) && !slices.Contains(cands, n) {
			cands = append(cands, n)
		}
	}
	return m.cfg.Placer.Place(ctx, k, cands)
}
