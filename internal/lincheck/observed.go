package lincheck

import (
	"math"

	"github.com/anishathalye/porcupine"
)

// boundObserved gives each write of unknown outcome whose value was
// observed a definite outcome and an end. Values are unique, so a read
// that returned the value, or a compare-and-set that succeeded against
// it, proves that the write took effect, and did so before that observer
// returned: the write is OK and returns when its first observer did (or
// at its own bound if that is earlier: History.AddBounded). The history
// allows the same linearizations as before, but the checker no longer
// carries such a write along, open, to the end of time (decision 0054).
// An observer that returned before the write was called leaves the write
// as it was: the history is illegal either way.
func boundObserved(ops []porcupine.Operation) {
	type kv struct{ key, value string }
	first := map[kv]int64{} // earliest return of an observer of each value
	for _, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		var v string
		switch {
		case out.Outcome != OK || op.Return == math.MaxInt64:
			continue
		case in.Kind == Read:
			v = out.Value
		case in.Kind == CAS:
			v = in.Expect
		}
		if v == "" {
			continue
		}
		if r, ok := first[kv{in.Key, v}]; !ok || op.Return < r {
			first[kv{in.Key, v}] = op.Return
		}
	}
	for i, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		if out.Outcome != Unknown || in.Kind == Read || in.Kind == Delete {
			continue
		}
		if r, ok := first[kv{in.Key, in.Value}]; ok && r > op.Call {
			ops[i].Output, ops[i].Return = Output{Outcome: OK}, min(r, op.Return)
		}
	}
}
