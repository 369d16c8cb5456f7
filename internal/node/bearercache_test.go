package node

import (
	"errors"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/auth"
)

// TestBearerCache: a remembered check holds only while the records are
// unchanged and the token unexpired; otherwise the token is checked again,
// and a refusal is never remembered.
func TestBearerCache(t *testing.T) {
	valid := map[string]time.Time{"a": {}, "b": time.Now().Add(time.Hour), "old": time.Now().Add(-time.Second)}
	checks := 0
	check := func(tok string) (auth.Principal, time.Time, error) {
		checks++
		until, ok := valid[tok]
		if !ok || !until.IsZero() && !time.Now().Before(until) {
			return auth.Principal{}, time.Time{}, errors.New("refused")
		}
		return auth.Principal{User: tok}, until, nil
	}
	c := newBearerCache()
	for _, step := range []struct {
		name    string
		token   string
		applied uint64
		ok      bool
		checks  int // checks made so far
	}{
		{"first use is checked", "a", 1, true, 1},
		{"same records: remembered", "a", 1, true, 1},
		{"another token is checked", "b", 1, true, 2},
		{"records changed: checked again", "a", 2, true, 3},
		{"unknown token refused", "x", 2, false, 4},
		{"a refusal is not remembered", "x", 2, false, 5},
		{"expired token refused", "old", 2, false, 6},
	} {
		p, ok := c.principal(step.token, step.applied, check)
		if ok != step.ok || ok && p.User != step.token || checks != step.checks {
			t.Fatalf("%s: ok %v user %q after %d checks, want ok %v after %d", step.name, ok, p.User, checks, step.ok, step.checks)
		}
	}
	delete(valid, "a") // revoked: the records change, so does the applied index
	if _, ok := c.principal("a", 3, check); ok {
		t.Fatal("a revoked token still accepted at a later applied index")
	}
	valid["soon"] = time.Now().Add(30 * time.Millisecond)
	if _, ok := c.principal("soon", 3, check); !ok {
		t.Fatal("a valid token refused")
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(valid["soon"]); {
		if time.Now().After(deadline) {
			t.Fatal("clock stuck")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, ok := c.principal("soon", 3, check); ok {
		t.Fatal("a remembered token accepted past its expiry")
	}
}
