package files

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/meta"
)

// ReadChoice is one node holding a valid copy of a file, as the node
// asked would try it for a read (Status.ReadOrder), with why it sits
// where it does.
type ReadChoice struct {
	Node   string `json:"node"`
	Zone   string `json:"zone,omitempty"`
	Reason string `json:"reason"`
}

// holder is what readOrder knows of one node with a valid copy.
type holder struct {
	id, zone string
	local    bool // this node's own copy
	// writer: it holds the file's write right (replication suspended);
	// the resumption policy counts the reads served there.
	writer bool
	alive  bool // seen alive (or suspect) by gossip
	load   *cluster.Load
}

// Ranks of readOrder, best first.
const (
	rankLocal = iota
	rankWriter
	rankSameZone
	rankOtherZone
	rankNotAlive
)

// rank places h for a reader in zone: its own copy, then the holder of
// the write right seen alive (the "reads" resumption policy counts the
// reads it serves: sent elsewhere, they would never resume replication),
// then holders seen alive in the reader's zone (only when it has one), then the other
// holders seen alive, then those not seen alive (a last resort).
func (h holder) rank(zone string) int {
	switch {
	case h.local:
		return rankLocal
	case !h.alive:
		return rankNotAlive
	case h.writer:
		return rankWriter
	case zone != "" && h.zone == zone:
		return rankSameZone
	}
	return rankOtherZone
}

// cpuPercent is h's CPU figure in whole percent (so that noise in the
// figures leaves the tie to the connections); -1 without figures.
func (h holder) cpuPercent() int {
	if h.load == nil {
		return -1
	}
	return int(math.Round(100 * h.load.CPU))
}

// readOrder orders the holders of a valid copy for a read by a node in
// zone (docs/decisions/0036): by rank, then, among holders seen alive,
// those with load figures before those without, the least CPU used, the
// fewest open connections; then by node ID, so that the order is stable.
// It returns a sorted copy.
func readOrder(zone string, hs []holder) []holder {
	out := slices.Clone(hs)
	slices.SortStableFunc(out, func(a, b holder) int {
		if c := cmp.Compare(a.rank(zone), b.rank(zone)); c != 0 {
			return c
		}
		if a.alive && !a.local && !a.writer {
			if c := cmp.Compare(a.noFigures(), b.noFigures()); c != 0 {
				return c
			}
			if a.load != nil {
				if c := cmp.Compare(a.cpuPercent(), b.cpuPercent()); c != 0 {
					return c
				}
				if c := cmp.Compare(a.load.Connections, b.load.Connections); c != 0 {
					return c
				}
			}
		}
		return cmp.Compare(a.id, b.id)
	})
	return out
}

// noFigures is 1 for a holder without load figures, 0 with.
func (h holder) noFigures() int {
	if h.load == nil {
		return 1
	}
	return 0
}

// reason says why h sits where it does in a reader's order.
func (h holder) reason(zone string) string {
	var why string
	switch h.rank(zone) {
	case rankLocal:
		return "local copy"
	case rankNotAlive:
		return "not seen alive"
	case rankWriter:
		return "holds the write right (its reads count toward resuming replication)"
	case rankSameZone:
		why = "same zone " + zone + ", "
	default:
		why = "other zone, "
		if zone == "" || h.zone == "" {
			why = "no zone to match, "
		}
	}
	if h.load == nil {
		return why + "no load figures yet"
	}
	return why + fmt.Sprintf("cpu %d%% conns %d", h.cpuPercent(), h.load.Connections)
}

// holders lists the nodes with a valid copy of f as this node sees them.
func (s *Service) holders(f *meta.File) []holder {
	hs := make([]holder, 0, len(f.Valid))
	for _, id := range f.Valid {
		zone, load := s.cl.Locality(id)
		hs = append(hs, holder{id: id, zone: zone, load: load, local: id == s.self, writer: id == f.Holder,
			alive: id == s.self || s.cl.Alive(id)})
	}
	return hs
}

// ReadOrder returns the nodes this node would read f from, in order, with
// the reasons (Status.ReadOrder).
func (s *Service) ReadOrder(f *meta.File) []ReadChoice {
	zone := s.cl.Zone()
	out := []ReadChoice{}
	for _, h := range readOrder(zone, s.holders(f)) {
		out = append(out, ReadChoice{Node: h.id, Zone: h.zone, Reason: h.reason(zone)})
	}
	return out
}
