package files

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/meta"
)

// ReadChoice is one node holding a valid copy of a file, as the node
// asked would try it for a read (Status.ReadOrder), with why it sits
// where it does.
type ReadChoice struct {
	Node string `json:"node"`
	Zone string `json:"zone,omitempty"`
	// RTTMillis is the round-trip time to the node as the node asked
	// measures it, in milliseconds (absent: not measured, or itself).
	RTTMillis float64 `json:"rtt_ms,omitempty"`
	Reason    string  `json:"reason"`
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
	rtt    time.Duration // the reader's round trip to it (0: not measured)
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

// rttClass is h's round trip in classes that double from a millisecond:
// 0 below 1 ms, 1 below 2 ms, 2 below 4 ms, 3 below 8 ms, and so on.
// Holders in one class are equally near and their load decides: a LAN's
// round trips differ by noise, not by distance (docs/decisions/0041).
// A holder not measured yet comes after every measured one.
func (h holder) rttClass() int {
	if h.rtt <= 0 {
		return math.MaxInt
	}
	return bits.Len64(uint64(h.rtt / time.Millisecond))
}

// readOrder orders the holders of a valid copy for a read by a node in
// zone (docs/decisions/0036, 0041): by rank, then, among holders seen
// alive, the nearest by measured round trip (rttClass), then those with
// load figures before those without, the least CPU used, the fewest open
// connections; then by node ID, so that the order is stable. It returns a
// sorted copy.
func readOrder(zone string, hs []holder) []holder {
	out := slices.Clone(hs)
	slices.SortStableFunc(out, func(a, b holder) int {
		if c := cmp.Compare(a.rank(zone), b.rank(zone)); c != 0 {
			return c
		}
		if a.alive && !a.local && !a.writer {
			if c := cmp.Compare(a.rttClass(), b.rttClass()); c != 0 {
				return c
			}
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
	if h.rtt > 0 {
		why += "rtt " + h.rtt.Round(10*time.Microsecond).String() + ", "
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
		h := holder{id: id, zone: zone, load: load, local: id == s.self, writer: id == f.Holder,
			alive: id == s.self || s.cl.Alive(id)}
		if !h.local {
			h.rtt = s.cl.RTT(id)
		}
		hs = append(hs, h)
	}
	return hs
}

// ReadOrder returns the nodes this node would read f from, in order, with
// the reasons (Status.ReadOrder).
func (s *Service) ReadOrder(f *meta.File) []ReadChoice {
	zone := s.cl.Zone()
	out := []ReadChoice{}
	for _, h := range readOrder(zone, s.holders(f)) {
		out = append(out, ReadChoice{Node: h.id, Zone: h.zone, RTTMillis: float64(h.rtt.Microseconds()) / 1000, Reason: h.reason(zone)})
	}
	return out
}
