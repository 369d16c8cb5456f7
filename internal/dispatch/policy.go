package dispatch

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// ErrUnknownPolicy is returned by NewPolicy for a name it does not know.
var ErrUnknownPolicy = errors.New("unknown scheduling policy")

// Policy picks the node for a new connection from the nodes' latest
// figures. It returns ok=false when no node may take it (none alive).
//
// A policy never chooses a node that is not Alive, and breaks ties by the
// least recently chosen node (NodeLoad.LastChosen), then the lowest ID, so
// that equal figures rotate and give the same answers every time. The
// Scheduler calls Choose under its lock, so a policy with state (a cursor,
// a random source) need not be safe for concurrent use itself.
type Policy interface {
	// Name is the policy's name in configuration and metrics.
	Name() string
	// Choose returns the chosen node's ID.
	Choose(c Conn, nodes []NodeLoad) (id string, ok bool)
}

// Policy names, as accepted by NewPolicy.
const (
	NameRoundRobin       = "round-robin"
	NameLeastConnections = "least-connections"
	NameLeastLoad        = "least-load"
	NameMostFreeMemory   = "most-free-memory"
	NamePowerOfTwo       = "p2c"
	NameStaticHash       = "static-hash"
)

// PolicyNames lists every policy NewPolicy knows, baseline last.
var PolicyNames = []string{
	NameRoundRobin, NameLeastConnections, NameLeastLoad,
	NameMostFreeMemory, NamePowerOfTwo, NameStaticHash,
}

// NewPolicy builds a policy by name with its defaults. rnd is the random
// source of the randomised policies; nil uses a source seeded at random.
func NewPolicy(name string, rnd *rand.Rand) (Policy, error) {
	switch name {
	case NameRoundRobin:
		return &RoundRobin{}, nil
	case NameLeastConnections:
		return LeastConnections{}, nil
	case NameLeastLoad:
		return LeastLoad{}, nil
	case NameMostFreeMemory:
		return MostFreeMemory{}, nil
	case NamePowerOfTwo:
		return NewPowerOfTwo(rnd), nil
	case NameStaticHash:
		return StaticHash{}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownPolicy, name)
}

// best returns the alive node that less ranks first, ties broken as in
// better. less reports whether a is strictly better than b.
func best(nodes []NodeLoad, less func(a, b NodeLoad) bool) (string, bool) {
	found := -1
	for i, n := range nodes {
		if !n.Alive {
			continue
		}
		if found < 0 || better(n, nodes[found], less) {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return nodes[found].ID, true
}

// better is less with the least recently chosen, then the ID, as the
// tie-breaks.
func better(a, b NodeLoad, less func(a, b NodeLoad) bool) bool {
	if less(a, b) {
		return true
	}
	if less(b, a) {
		return false
	}
	if a.LastChosen != b.LastChosen {
		return a.LastChosen < b.LastChosen
	}
	return a.ID < b.ID
}
