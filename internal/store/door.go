package store

import (
	"encoding/binary"
	"hash/maphash"
	"sync/atomic"
)

// doorkeeper decides which blobs served from their segment (openSection)
// are worth the memory cache: a blob that misses the cache is sent from
// its segment the first time, and read into the cache the second (the
// "doorkeeper" of TinyLFU). A hot blob thus costs one read, then is sent
// from memory (cheaper than sendfile below 64 KiB on loopback, decision
// 0053); blobs read once each (a scan, a working set larger than the
// cache) are never read into memory, nor do they evict the hot ones.
//
// It is a bit set of 2^16 bits indexed by a hash of (path, id), cleared
// after doorResetAfter marks so that it stays sparse (a false positive
// only admits a blob at its first miss) and forgets blobs that were hot
// once.
type doorkeeper struct {
	bits [doorBits / 64]atomic.Uint64
	n    atomic.Int64
	seed maphash.Seed
}

const (
	doorBits       = 1 << 16
	doorResetAfter = doorBits / 4
)

func newDoorkeeper() *doorkeeper { return &doorkeeper{seed: maphash.MakeSeed()} }

// again marks (l's path, id) as seen and reports whether it was seen
// before.
func (d *doorkeeper) again(l loc, id string) bool {
	h := binary.LittleEndian.Uint64(l.key[:8]) ^ maphash.String(d.seed, id)
	w, m := &d.bits[(h/64)%(doorBits/64)], uint64(1)<<(h%64)
	if w.Load()&m != 0 {
		return true
	}
	w.Or(m)
	if d.n.Add(1) >= doorResetAfter {
		d.n.Store(0)
		for i := range d.bits {
			d.bits[i].Store(0)
		}
	}
	return false
}
