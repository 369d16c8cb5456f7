package history

import (
	"math"
	"sync"
)

// Resolutions of a series: one point a second for an hour, one a minute
// (each the mean, or the largest for Field.Max, of its minute's seconds)
// for a day.
const (
	FineStep    = 1
	FineKeep    = 3600
	CoarseStep  = 60
	CoarseKeep  = 24 * 60
	pointBytes  = (8 + 4*NumFields + 7) / 8 * 8        // the time and the figures, padded to 8 bytes
	SeriesBytes = (FineKeep + CoarseKeep) * pointBytes // the memory one node's series holds, full
)

// Series is one node's history at both resolutions. It is safe for
// concurrent use.
type Series struct {
	mu     sync.Mutex
	fine   *Ring
	coarse *Ring
	acc    minute
}

// NewSeries returns an empty series.
func NewSeries() *Series {
	return &Series{fine: NewRing(FineKeep), coarse: NewRing(CoarseKeep)}
}

// Add records a point (ignored unless newer than the last) and, when it
// opens a new minute, closes the previous minute into the coarse ring.
func (s *Series) Add(p Point) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.add(p)
}

func (s *Series) add(p Point) {
	if !s.fine.Add(p) {
		return
	}
	m := p.T - p.T%CoarseStep
	if s.acc.count > 0 && m != s.acc.start {
		s.coarse.Add(s.acc.point())
		s.acc = minute{}
	}
	s.acc.add(m, p)
}

// Merge adds what a peer sent: its coarse points first (older than any
// fine one it holds), then the fine ones.
func (s *Series) Merge(fine, coarse []Point) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range coarse {
		s.coarse.Add(p)
	}
	for _, p := range fine {
		s.add(p)
	}
}

// Since returns copies of the fine points newer than fineT and of the
// coarse points newer than coarseT.
func (s *Series) Since(fineT, coarseT int64) (fine, coarse []Point) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fine.Since(fineT), s.coarse.Since(coarseT)
}

// Last returns the newest point (false: none yet).
func (s *Series) Last() (Point, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fine.Last()
}

// Len returns the number of fine and coarse points held.
func (s *Series) Len() (fine, coarse int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fine.Len(), s.coarse.Len()
}

// minute accumulates the seconds of one minute.
type minute struct {
	start int64
	count int
	sum   [NumFields]float64
	n     [NumFields]int
	max   [NumFields]float32
}

func (m *minute) add(start int64, p Point) {
	m.start = start
	m.count++
	for i, v := range p.V {
		if math.IsNaN(float64(v)) {
			continue
		}
		if m.n[i] == 0 || v > m.max[i] {
			m.max[i] = v
		}
		m.sum[i] += float64(v)
		m.n[i]++
	}
}

func (m *minute) point() Point {
	p := Unknown(m.start)
	for i, f := range Fields {
		switch {
		case m.n[i] == 0:
		case f.Max:
			p.V[i] = m.max[i]
		default:
			p.V[i] = float32(m.sum[i] / float64(m.n[i]))
		}
	}
	return p
}
