package files

import (
	"slices"
	"testing"
	"time"
)

// TestProtectedKeep: a blob is protected until its deadline, also
// between two sweeps of expired entries.
func TestProtectedKeep(t *testing.T) {
	var p protected
	p.add("f", "live", time.Hour)
	p.add("f", "gone", -time.Second) // already expired
	p.add("g", "other", time.Hour)
	for round := range 2 { // the first call sweeps, the second does not
		if got := p.keep("f", []string{"live", "gone", "other", "none"}); !slices.Equal(got, []string{"live"}) {
			t.Fatalf("round %d: keep = %v, want [live]", round, got)
		}
	}
	p.add("f", "late", -time.Second) // expired, swept only in a second
	if got := p.keep("f", []string{"late"}); len(got) != 0 {
		t.Fatalf("an expired entry before the sweep: %v", got)
	}
	if len(p.m) != 3 {
		t.Fatalf("%d entries, want 3 (the first sweep removed one)", len(p.m))
	}
}
