package meta

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The idempotency table behaves as a map of the last MaxIdem new keys,
// oldest first, through many wrap-arounds of its ring and deletions from
// its index.
func TestIdemTableMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := NewState()
	ref := map[string]IdemRecord{}
	var order []string
	for i := range 4 * MaxIdem {
		// Mostly new keys; some repeat a recent or an old one.
		k := fmt.Sprint("k", i)
		if i > 0 && rng.IntN(8) == 0 {
			k = fmt.Sprint("k", rng.IntN(i))
		}
		r := IdemRecord{Key: k, Kind: KindCommit, Path: fmt.Sprint("p", i%7), Version: uint64(i + 1)}
		s.rememberIdem(r)
		if _, ok := ref[k]; !ok {
			order = append(order, k)
		}
		ref[k] = r
		if len(order) > MaxIdem {
			delete(ref, order[0])
			order = order[1:]
		}
		if i%997 == 0 || i == 4*MaxIdem-1 {
			for j := range 50 {
				probe := fmt.Sprint("k", rng.IntN(i+1))
				if j == 0 {
					probe = order[0]
				}
				got, ok := s.Idem(probe)
				want, wok := ref[probe]
				if ok != wok || got != want {
					t.Fatalf("after %d: Idem(%s) = %v %v, want %v %v", i, probe, got, ok, want, wok)
				}
			}
		}
	}
	var want []IdemRecord
	for _, k := range order {
		want = append(want, ref[k])
	}
	if got := s.idemRecords(); !slices.Equal(got, want) {
		t.Fatalf("records differ from the reference (%d vs %d)", len(got), len(want))
	}
	if cap(s.idem.ring) != MaxIdem {
		t.Fatalf("ring capacity %d, want %d", cap(s.idem.ring), MaxIdem)
	}
}
