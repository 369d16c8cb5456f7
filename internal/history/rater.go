package history

import (
	"math"
	"time"
)

// Reading is a node's figures as it reads them: counter fields
// (Field.Counter) are running totals, in float64 so that a large total
// keeps the precision its differences need.
type Reading struct {
	At time.Time
	V  [NumFields]float64
}

// Rater turns readings into points: counter fields become rates per
// second against the previous reading; on the first reading, and for a
// counter that went backwards (a restart), they are unknown. Point.T is
// the reading's time rounded to the second.
type Rater struct {
	prev Reading
	has  bool
}

// Point returns the point for reading r.
func (ra *Rater) Point(r Reading) Point {
	p := Point{T: r.At.Round(time.Second).Unix()}
	dt := r.At.Sub(ra.prev.At).Seconds()
	for i, f := range Fields {
		v := r.V[i]
		if f.Counter {
			old := ra.prev.V[i]
			if !ra.has || dt <= 0 || math.IsNaN(v) || math.IsNaN(old) || v < old {
				v = math.NaN()
			} else {
				v = (v - old) / dt
			}
		}
		p.V[i] = float32(v)
	}
	ra.prev, ra.has = r, true
	return p
}
