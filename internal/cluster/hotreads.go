package cluster

import (
	"fmt"
	"strconv"
	"strings"
)

// What a node gossips of its busiest files (their reads per second
// through it, for want of a copy) fits in what memberlist's 512 bytes of
// metadata leave: MaxHotReads entries of at most 12 bytes, a key of
// HotKeyBits and a rate up to MaxHotRate.
const (
	MaxHotReads = 3
	HotKeyBits  = 24
	MaxHotRate  = 99_999
)

// HotRead is one file a node sends reads of elsewhere, as gossip carries
// it: a key the file service derives from the path (a hash of HotKeyBits
// bits, so that any path fits; higher bits are dropped) and the reads per
// second over the node's last window (capped at MaxHotRate).
type HotRead struct {
	Key       uint32
	PerSecond int
}

// SetHotReads sets what this node gossips of its busiest files (the first
// MaxHotReads), with its next metadata (every Timing.LoadInterval).
func (c *Cluster) SetHotReads(hs []HotRead) {
	enc := encodeHotReads(hs)
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	c.hotReads = enc
}

// HotReads returns what gossip last said of node id's busiest files
// (self: what this node gossips; nil: nothing, or an older binary).
func (c *Cluster) HotReads(id string) []HotRead {
	if id == c.cfg.NodeID {
		return decodeHotReads(c.localHotReads())
	}
	g := c.gossip
	g.mu.Lock()
	enc := ""
	if p, ok := g.peers[id]; ok {
		enc = p.meta.Hot
	}
	g.mu.Unlock()
	return decodeHotReads(enc)
}

func (c *Cluster) localHotReads() string {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	return c.hotReads
}

// encodeHotReads writes "key:rate,..." with the key in hex.
func encodeHotReads(hs []HotRead) string {
	var b strings.Builder
	for i, h := range hs {
		if i == MaxHotReads {
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%x:%d", h.Key&(1<<HotKeyBits-1), min(max(h.PerSecond, 0), MaxHotRate))
	}
	return b.String()
}

// decodeHotReads reads encodeHotReads' form; it skips what it cannot
// read (a newer binary's additions).
func decodeHotReads(s string) []HotRead {
	if s == "" {
		return nil
	}
	var out []HotRead
	for e := range strings.SplitSeq(s, ",") {
		k, r, ok := strings.Cut(e, ":")
		key, err1 := strconv.ParseUint(k, 16, HotKeyBits)
		rate, err2 := strconv.Atoi(r)
		if ok && err1 == nil && err2 == nil && rate >= 0 && len(out) < MaxHotReads {
			out = append(out, HotRead{Key: uint32(key), PerSecond: rate})
		}
	}
	return out
}
