package sessions

import (
	"context"
	"errors"
	"slices"
)

// ErrNoNode: no live node can take the session.
var ErrNoNode = errors.New("no live node can take the session")

// Placer picks the node a session starts on, among live candidates (IDs,
// sorted). Placement by load (paper 004: desktops on the node with the
// fewest sessions, applications on the one with the most free memory) is
// issue 25's; it plugs in here.
type Placer interface {
	Place(ctx context.Context, k Kind, candidates []string) (string, error)
}

// Fallback places on the first candidate: what restarts elsewhere use
// until a placer by load exists.
type Fallback struct{}

// Place implements Placer.
func (Fallback) Place(_ context.Context, _ Kind, candidates []string) (string, error) {
	if len(candidates) == 0 {
		return "", ErrNoNode
	}
	return slices.Min(candidates), nil
}
