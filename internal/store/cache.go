package store

import (
	"sync"
	"sync/atomic"
)

// cacheKey identifies a blob. A struct of two strings is used as the map key
// so that lookups never allocate.
type cacheKey struct{ path, id string }

// entryOverhead approximates the per-entry bookkeeping cost (map slot, list
// node, slice and string headers) charged against the byte budget.
const entryOverhead = 128

type cacheEntry struct {
	key        cacheKey
	data       []byte
	cost       int64
	prev, next *cacheEntry
}

// cache is a byte-bounded LRU of small blobs' contents.
//
// Staleness protocol: a reader that misses samples gen(stripe) BEFORE opening
// the file and passes it to add; every mutation of a blob, AFTER changing
// the files, calls invalidate, which bumps the generation of the stripe and
// then deletes the entry. add inserts only if the generation is unchanged
// (checked under mu), so content read before a Remove or a replacing Commit
// can never be inserted after it.
type cache struct {
	maxBytes int64
	maxBlob  int64
	gens     [numStripes]atomic.Uint64

	mu    sync.Mutex
	items map[cacheKey]*cacheEntry
	head  cacheEntry // sentinel: head.next is most recently used
	used  int64
}

func newCache(maxBytes, maxBlob int64) *cache {
	c := &cache{maxBytes: maxBytes, maxBlob: maxBlob, items: make(map[cacheKey]*cacheEntry)}
	c.head.next, c.head.prev = &c.head, &c.head
	return c
}

// fits reports whether a blob of the given size may be cached.
func (c *cache) fits(size int64) bool {
	return c.maxBytes > 0 && size <= c.maxBlob && size+entryOverhead <= c.maxBytes
}

func (c *cache) gen(stripe int) uint64 { return c.gens[stripe].Load() }

func (c *cache) get(k cacheKey) ([]byte, bool) {
	if c.maxBytes <= 0 {
		return nil, false
	}
	c.mu.Lock()
	e, ok := c.items[k]
	if !ok {
		c.mu.Unlock()
		return nil, false
	}
	if c.head.next != e {
		c.unlink(e)
		c.pushFront(e)
	}
	data := e.data
	c.mu.Unlock()
	return data, true
}

// add inserts data unless the stripe was invalidated since gen was sampled.
func (c *cache) add(k cacheKey, stripe int, gen uint64, data []byte) {
	cost := int64(len(data)+len(k.path)+len(k.id)) + entryOverhead
	if c.maxBytes <= 0 || cost > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gens[stripe].Load() != gen {
		return
	}
	if old, ok := c.items[k]; ok {
		c.remove(old)
	}
	for c.used+cost > c.maxBytes {
		c.remove(c.head.prev)
	}
	e := &cacheEntry{key: k, data: data, cost: cost}
	c.items[k] = e
	c.pushFront(e)
	c.used += cost
}

// invalidate drops k; see the staleness protocol on cache.
func (c *cache) invalidate(k cacheKey, stripe int) {
	c.gens[stripe].Add(1)
	if c.maxBytes <= 0 {
		return
	}
	c.mu.Lock()
	if e, ok := c.items[k]; ok {
		c.remove(e)
	}
	c.mu.Unlock()
}

// invalidateID drops every entry of blob id in stripe, whatever its path
// (for a blob whose sidecar, hence path, cannot be read). It walks the
// whole cache: only for the rare blob found corrupt.
func (c *cache) invalidateID(id string, stripe int) {
	c.gens[stripe].Add(1)
	if c.maxBytes <= 0 {
		return
	}
	c.mu.Lock()
	for k, e := range c.items {
		if k.id == id {
			c.remove(e)
		}
	}
	c.mu.Unlock()
}

func (c *cache) clear() {
	for i := range c.gens {
		c.gens[i].Add(1)
	}
	c.mu.Lock()
	c.items = make(map[cacheKey]*cacheEntry)
	c.head.next, c.head.prev = &c.head, &c.head
	c.used = 0
	c.mu.Unlock()
}

// stats returns the number of entries and the bytes charged (for tests).
func (c *cache) stats() (n int, used int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.used
}

func (c *cache) remove(e *cacheEntry) {
	c.unlink(e)
	delete(c.items, e.key)
	c.used -= e.cost
}

func (c *cache) unlink(e *cacheEntry) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
}

func (c *cache) pushFront(e *cacheEntry) {
	e.prev = &c.head
	e.next = c.head.next
	c.head.next.prev = e
	c.head.next = e
}
