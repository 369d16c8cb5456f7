package cluster

import (
	"errors"
	"fmt"
)

// MaxZoneLen is the longest zone label, in bytes: every member gossips
// its label in metadata memberlist caps at 512 bytes.
const MaxZoneLen = 64

// ErrBadZone is returned for a zone label ValidZone refuses.
var ErrBadZone = errors.New("bad zone label")

// ValidZone checks a --zone label: at most MaxZoneLen ASCII letters,
// digits, '-', '_' and '.' ("" is no zone).
func ValidZone(z string) error {
	if len(z) > MaxZoneLen {
		return fmt.Errorf("%w: %q is %d bytes, at most %d", ErrBadZone, z, len(z), MaxZoneLen)
	}
	for _, r := range z {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return fmt.Errorf("%w: %q may hold only letters, digits, '-', '_' and '.'", ErrBadZone, z)
		}
	}
	return nil
}

// Zone returns this node's zone label ("": none).
func (c *Cluster) Zone() string { return c.cfg.Zone }

// Locality returns what gossip last said of node id's zone and load
// (self: this node's own; load nil when no figures came yet). It reads
// one record: it runs for every read forwarded or redirected.
func (c *Cluster) Locality(id string) (zone string, load *Load) {
	if id == c.cfg.NodeID {
		return c.cfg.Zone, c.localLoad()
	}
	g := c.gossip
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := g.peers[id]; ok {
		return p.meta.Zone, p.meta.Load
	}
	return "", nil
}
