package files

import (
	"slices"
	"testing"
	"time"
)

// TestProtectedKeep: a blob is protected until its deadline, also
// between two sweeps of expired entries; the current version's blob is
// left out (it is kept anyway) and so is its end of protection.
func TestProtectedKeep(t *testing.T) {
	var p protected
	p.add("f", "live", time.Hour)
	p.add("f", "gone", -time.Second) // already expired
	p.add("g", "other", time.Hour)
	for round := range 2 { // the first call sweeps, the second does not
		got, until := p.keep("f", []string{"live", "gone", "other", "none"}, "")
		if !slices.Equal(got, []string{"live"}) || until.Before(time.Now().Add(59*time.Minute)) {
			t.Fatalf("round %d: keep = %v until %v, want [live] for an hour", round, got, until)
		}
	}
	p.add("f", "late", -time.Second) // expired, swept only in a second
	if got, until := p.keep("f", []string{"live", "gone"}, "live"); len(got) != 0 || !until.IsZero() {
		t.Fatalf("with live current: keep = %v until %v, want none", got, until)
	}
	if got, _ := p.keep("f", []string{"late"}, ""); len(got) != 0 {
		t.Fatalf("an expired entry before the sweep: %v", got)
	}
	if len(p.m) != 3 {
		t.Fatalf("%d entries, want 3 (the first sweep removed one)", len(p.m))
	}
}
