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
		got, until := p.keep("f", []string{"live", "gone", "other", "none"}, "", 0)
		if !slices.Equal(got, []string{"live"}) || until.Before(time.Now().Add(59*time.Minute)) {
			t.Fatalf("round %d: keep = %v until %v, want [live] for an hour", round, got, until)
		}
	}
	p.add("f", "late", -time.Second) // expired, swept only in a second
	if got, until := p.keep("f", []string{"live", "gone"}, "live", 0); len(got) != 0 || !until.IsZero() {
		t.Fatalf("with live current: keep = %v until %v, want none", got, until)
	}
	if got, _ := p.keep("f", []string{"late"}, "", 0); len(got) != 0 {
		t.Fatalf("an expired entry before the sweep: %v", got)
	}
	if len(p.m) != 3 {
		t.Fatalf("%d entries, want 3 (the first sweep removed one)", len(p.m))
	}
}

// A blob written here stays protected after its commit until this node
// has applied the commit, as the record read after shows; without that
// index known (0), or before it, until its time.
func TestProtectedUntilApplied(t *testing.T) {
	for _, tc := range []struct {
		name      string
		committed uint64 // the commit's index (0: not committed)
		life      time.Duration
		applied   uint64
		kept      bool
	}{
		{"not committed", 0, time.Hour, 100, true},
		{"commit not applied yet", 5, time.Hour, 4, true},
		{"applied index unknown", 5, time.Hour, 0, true},
		{"commit applied", 5, time.Hour, 5, false},
		{"applied beyond", 5, time.Hour, 9, false},
		{"time ended first", 5, -time.Second, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p protected
			p.add("f", "b", tc.life)
			if tc.committed != 0 {
				p.committed("f", "b", tc.committed)
			}
			p.committed("f", "absent", 1) // no entry: none made
			got, _ := p.keep("f", []string{"b", "absent"}, "", tc.applied)
			if kept := slices.Equal(got, []string{"b"}); kept != tc.kept || len(got) > 1 {
				t.Fatalf("keep = %v, want b kept: %v", got, tc.kept)
			}
			if _, ok := p.m["f\x00absent"]; ok {
				t.Fatal("committed made an entry for a blob not protected")
			}
		})
	}
}
