package dispatch

import (
	"net/netip"
	"sync"
	"time"
)

// fakeClock is a clock tests move by hand, so TTLs and ages need no sleeps.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// conn is a connection from the given "addr:port".
func conn(s string) Conn { return Conn{Client: netip.MustParseAddrPort(s)} }
