package node

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/auth"
)

// bearerCache remembers bearer token checks for the faces that check one
// per read (the front and the fast lane): a check costs a SHA-256 and a
// lookup, a sixth of a small read's time. An answer holds exactly as long
// as the check would give it again: while the replicated records are
// unchanged (the state machine's applied index, read before the check:
// a revocation, a grant change or a snapshot moves it) and the token has
// not expired. Entries are found by a seeded hash of the token.
type bearerCache struct {
	seed maphash.Seed
	mu   sync.Mutex
	m    map[uint64]bearerEntry
}

type bearerEntry struct {
	token   string
	applied uint64
	until   time.Time // the token's expiry; zero: none
	p       auth.Principal
}

// bearerCacheMax bounds the tokens remembered; past it the cache starts
// over.
const bearerCacheMax = 4096

func newBearerCache() *bearerCache {
	return &bearerCache{seed: maphash.MakeSeed(), m: map[uint64]bearerEntry{}}
}

// principal returns the principal of token, checking it with check unless
// an answer given at the same applied index still holds.
func (c *bearerCache) principal(token string, applied uint64, check func(string) (auth.Principal, time.Time, error)) (auth.Principal, bool) {
	k := maphash.String(c.seed, token)
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if ok && e.applied == applied && e.token == token && (e.until.IsZero() || time.Now().Before(e.until)) {
		return e.p, true
	}
	p, until, err := check(token)
	if err != nil {
		return auth.Principal{}, false
	}
	c.mu.Lock()
	if len(c.m) >= bearerCacheMax {
		clear(c.m)
	}
	c.m[k] = bearerEntry{token: token, applied: applied, until: until, p: p}
	c.mu.Unlock()
	return p, true
}
