package dispatch

import (
	"container/list"
	"net/netip"
	"sync"
	"time"
)

// Affinity defaults.
const (
	DefaultAffinityTTL      = 60 * time.Second
	DefaultAffinityCapacity = 100_000
)

// KeyFunc maps a connection to its affinity key: connections with the same
// key go to the same node while the entry lives.
type KeyFunc func(Conn) netip.AddrPort

// ByAddr keys by client address alone, the default: at L7 a client's
// retried or next connection comes from a new port.
func ByAddr(c Conn) netip.AddrPort { return netip.AddrPortFrom(c.Client.Addr(), 0) }

// ByAddrPort keys by client address and port, as 001's master did so that
// a retransmitted SYN reached the same node.
func ByAddrPort(c Conn) netip.AddrPort { return c.Client }

// ByPrefix keys by the client's network of the given prefix length (for
// clients behind a pool of NAT addresses).
func ByPrefix(bits int) KeyFunc {
	return func(c Conn) netip.AddrPort {
		p, err := c.Client.Addr().Prefix(bits)
		if err != nil {
			return ByAddr(c)
		}
		return netip.AddrPortFrom(p.Addr(), 0)
	}
}

// AffinityConfig configures an Affinity table.
type AffinityConfig struct {
	// TTL is how long a client stays with its node after its last
	// connection there. Longer keeps more clients on warm nodes but lets a
	// node that became busy keep receiving its old clients.
	TTL time.Duration
	// Capacity caps the entries; the oldest go first. It bounds the
	// dispatcher's memory under a flood of distinct clients.
	Capacity int
	// Key maps a connection to its key (nil: ByAddr).
	Key KeyFunc
	// Now is the clock (nil: time.Now); tests pass a fake one.
	Now func() time.Time
}

// DefaultAffinityConfig returns the defaults: keyed by client address.
func DefaultAffinityConfig() AffinityConfig {
	return AffinityConfig{TTL: DefaultAffinityTTL, Capacity: DefaultAffinityCapacity, Key: ByAddr}
}

// Affinity remembers which node each client was sent to, for a while. It is
// safe for concurrent use. Losing it (a new dispatcher) only costs locality.
type Affinity struct {
	cfg AffinityConfig

	mu      sync.Mutex
	entries map[netip.AddrPort]*list.Element
	order   *list.List // of *affinityEntry, oldest first
}

type affinityEntry struct {
	key     netip.AddrPort
	node    string
	expires time.Time
}

// NewAffinity returns an empty table; zero fields of cfg take the defaults.
func NewAffinity(cfg AffinityConfig) *Affinity {
	def := DefaultAffinityConfig()
	if cfg.TTL <= 0 {
		cfg.TTL = def.TTL
	}
	if cfg.Capacity <= 0 {
		cfg.Capacity = def.Capacity
	}
	if cfg.Key == nil {
		cfg.Key = def.Key
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Affinity{cfg: cfg, entries: make(map[netip.AddrPort]*list.Element), order: list.New()}
}

// Lookup returns the node c's client was last sent to, if that was within
// the TTL and alive(node) still holds; otherwise it forgets the entry.
// alive is called with the table locked and must not call back into it.
func (a *Affinity) Lookup(c Conn, alive func(id string) bool) (string, bool) {
	key := a.cfg.Key(c)
	a.mu.Lock()
	defer a.mu.Unlock()
	el, ok := a.entries[key]
	if !ok {
		return "", false
	}
	e := el.Value.(*affinityEntry)
	if !a.cfg.Now().Before(e.expires) || !alive(e.node) {
		a.remove(el)
		return "", false
	}
	return e.node, true
}

// Remember records that c's client was sent to node, restarting its TTL.
func (a *Affinity) Remember(c Conn, node string) {
	key := a.cfg.Key(c)
	now := a.cfg.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if el, ok := a.entries[key]; ok {
		a.remove(el)
	}
	e := &affinityEntry{key: key, node: node, expires: now.Add(a.cfg.TTL)}
	a.entries[key] = a.order.PushBack(e)
	a.evict(now)
}

// Len returns the number of entries, expired ones not yet evicted included.
func (a *Affinity) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.order.Len()
}

// evict drops expired entries and, over capacity, the oldest. Entries are
// ordered by when they were remembered and share one TTL, so both kinds
// sit at the front.
func (a *Affinity) evict(now time.Time) {
	for el := a.order.Front(); el != nil; el = a.order.Front() {
		e := el.Value.(*affinityEntry)
		if a.order.Len() <= a.cfg.Capacity && now.Before(e.expires) {
			return
		}
		a.remove(el)
	}
}

func (a *Affinity) remove(el *list.Element) {
	delete(a.entries, el.Value.(*affinityEntry).key)
	a.order.Remove(el)
}
