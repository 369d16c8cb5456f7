package monitor

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/internal/history"
)

// shared holds the two encodings every dashboard and program asks for,
// built at most once per interval and then handed to every request and
// event stream: the view (without its user) and the whole history. The
// figures change once per interval anyway (sample, pull, publish), and
// on an overloaded node the CPU is what is short: each open dashboard
// building its own view every second, and each page load or restarted
// peer encoding the whole history (an hour and a day of every node, 1.8
// MB and 40 ms for 3 nodes), is work the node then answers late
// (docs/decisions/0044-dashboard-under-overload.md).
type shared struct {
	gen  atomic.Uint64 // publishes so far; an encoding of an older one is stale
	view encoding
	full encoding
	// marks is, per node, the newest fine and coarse point in full
	// (guarded by full.mu).
	marks map[string][2]int64
}

// encoding is one shared encoding; mu is held while it is built, so that
// concurrent askers wait for one build rather than each doing their own.
type encoding struct {
	mu    sync.Mutex
	gen   uint64
	built bool
	b     []byte
}

func (e *encoding) fresh(gen uint64) bool { return e.built && e.gen == gen }

func (e *encoding) set(gen uint64, b []byte) {
	e.gen, e.built, e.b = gen, true, b
}

// published marks every encoding stale: the next asker builds it again.
func (sh *shared) published() { sh.gen.Add(1) }

// viewJSON returns the view as JSON for user ("" for none), built at most
// once per interval; it marks the view drawn (viewed).
func (s *Service) viewJSON(user string) ([]byte, error) {
	s.viewed.Store(time.Now().UnixNano())
	e, gen := &s.shared.view, s.shared.gen.Load()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.fresh(gen) {
		b, err := json.Marshal(s.view())
		if err != nil {
			return nil, err
		}
		e.set(gen, b)
	}
	return withUser(e.b, user), nil
}

// withUser returns the encoded view b with its "user" member set (b
// encodes a View without one: a JSON object whose first member is
// "node").
func withUser(b []byte, user string) []byte {
	if user == "" {
		return b
	}
	u, _ := json.Marshal(user) // a string always encodes
	out := make([]byte, 0, len(b)+len(u)+9)
	out = append(out, `{"user":`...)
	out = append(out, u...)
	out = append(out, ',')
	return append(out, b[1:]...)
}

// historyJSON returns the whole history as JSON (history.Dump's wire
// format), built at most once per interval, and per node the newest fine
// and coarse point it holds (the caller must not change the map).
func (s *Service) historyJSON() ([]byte, map[string][2]int64, error) {
	sh := &s.shared
	e, gen := &sh.full, sh.gen.Load()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.fresh(gen) {
		d := s.set.Dump(0)
		b, err := json.Marshal(d)
		if err != nil {
			return nil, nil, err
		}
		e.set(gen, b)
		sh.marks = marksOf(d)
	}
	return e.b, sh.marks, nil
}

// marksOf returns, per node of d, the time of its newest fine and coarse
// point (0 where it has none).
func marksOf(d history.Dump) map[string][2]int64 {
	m := make(map[string][2]int64, len(d.Nodes))
	for id, nd := range d.Nodes {
		var mark [2]int64
		if len(nd.Fine) > 0 {
			mark[0] = nd.Fine[len(nd.Fine)-1].T
		}
		if len(nd.Coarse) > 0 {
			mark[1] = nd.Coarse[len(nd.Coarse)-1].T
		}
		m[id] = mark
	}
	return m
}
