package dsc

import (
	"container/list"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// SYNTable is the master's memory of which node it sent each client's SYN to.
// A client that gets no SYN-ACK in time retransmits its SYN; sent to another
// node, it would open a second half-open connection there, and the client
// would see a reset or a duplicate. The table sends the retransmission to the
// node that already holds the half-open connection.
//
// Entries expire ttl after their last Remember (a handshake that has not
// completed by then has failed anyway) and the table holds at most max
// entries, evicting the oldest first, so a SYN flood cannot exhaust memory.
// A SYNTable is safe for concurrent use.
type SYNTable struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu sync.Mutex
	// order holds *synEntry from the least to the most recently remembered,
	// so both eviction and expiry take from the front.
	order   *list.List
	clients map[netip.AddrPort]*list.Element
}

type synEntry struct {
	client netip.AddrPort
	node   string
	at     time.Time // last Remember
}

// NewSYNTable returns an empty table whose entries live for ttl, holding at
// most maxEntries entries (fewer than 1 is raised to 1). now is the clock; nil
// means time.Now.
func NewSYNTable(ttl time.Duration, maxEntries int, now func() time.Time) *SYNTable {
	if now == nil {
		now = time.Now
	}
	return &SYNTable{
		ttl:     ttl,
		max:     max(maxEntries, 1),
		now:     now,
		order:   list.New(),
		clients: make(map[netip.AddrPort]*list.Element),
	}
}

// Lookup returns the node that client's SYN was last sent to, unless that
// entry has expired.
func (t *SYNTable) Lookup(client netip.AddrPort) (node string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire()
	el, ok := t.clients[client]
	if !ok {
		return "", false
	}
	return el.Value.(*synEntry).node, true
}

// Remember records that client's SYN went to node, restarting its ttl.
func (t *SYNTable) Remember(client netip.AddrPort, node string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire()
	t.put(client, node)
}

// Rebuild replaces the table's content with entries, as a newly elected
// master gathers them from the nodes: each node's name maps to the client
// address:ports of its half-open (SYN_RECV) connections. Every entry starts
// a fresh ttl. Should more than max be reported, the surplus is dropped.
func (t *SYNTable) Rebuild(entries map[string][]netip.AddrPort) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.order.Init()
	clear(t.clients)
	// Sorted node names make the result, eviction included, deterministic.
	for _, node := range slices.Sorted(maps.Keys(entries)) {
		for _, client := range entries[node] {
			t.put(client, node)
		}
	}
}

// Len returns the number of live entries.
func (t *SYNTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire()
	return t.order.Len()
}

// put inserts or refreshes client's entry and evicts beyond max. t.mu is held.
func (t *SYNTable) put(client netip.AddrPort, node string) {
	e := &synEntry{client: client, node: node, at: t.now()}
	if el, ok := t.clients[client]; ok {
		el.Value = e
		t.order.MoveToBack(el)
	} else {
		t.clients[client] = t.order.PushBack(e)
	}
	for t.order.Len() > t.max {
		t.remove(t.order.Front())
	}
}

// expire removes expired entries from the front. Entries are ordered by their
// last Remember, so the first live one ends the scan. t.mu is held.
func (t *SYNTable) expire() {
	now := t.now()
	for el := t.order.Front(); el != nil; el = t.order.Front() {
		if now.Sub(el.Value.(*synEntry).at) < t.ttl {
			return
		}
		t.remove(el)
	}
}

func (t *SYNTable) remove(el *list.Element) {
	delete(t.clients, el.Value.(*synEntry).client)
	t.order.Remove(el)
}
