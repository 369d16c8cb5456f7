package history

// Ring holds the latest points of a series in time order, up to its
// capacity: adding to a full ring drops the oldest. It is not safe for
// concurrent use (Series locks it).
type Ring struct {
	buf   []Point
	start int // index of the oldest point
	n     int
}

// NewRing returns an empty ring holding up to capacity points.
func NewRing(capacity int) *Ring { return &Ring{buf: make([]Point, max(capacity, 1))} }

// Len returns the number of points held.
func (r *Ring) Len() int { return r.n }

// Cap returns the most points the ring holds.
func (r *Ring) Cap() int { return len(r.buf) }

// at returns the i-th oldest point.
func (r *Ring) at(i int) Point { return r.buf[(r.start+i)%len(r.buf)] }

// Last returns the newest point (false: empty).
func (r *Ring) Last() (Point, bool) {
	if r.n == 0 {
		return Point{}, false
	}
	return r.at(r.n - 1), true
}

// Add appends p. A point not newer than the last one is ignored: a series
// only moves forward, so that merging the same points twice (from two
// peers) changes nothing.
func (r *Ring) Add(p Point) bool {
	if last, ok := r.Last(); ok && p.T <= last.T {
		return false
	}
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = p
		r.n++
		return true
	}
	r.buf[r.start] = p
	r.start = (r.start + 1) % len(r.buf)
	return true
}

// Since returns a copy of the points newer than t, oldest first.
func (r *Ring) Since(t int64) []Point {
	// The points are sorted by time: find the first newer than t.
	lo, hi := 0, r.n
	for lo < hi {
		mid := (lo + hi) / 2
		if r.at(mid).T <= t {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	out := make([]Point, r.n-lo)
	for i := range out {
		out[i] = r.at(lo + i)
	}
	return out
}
