package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/history"
)

// maxDump bounds a peer's answer: a day of minutes and an hour of
// seconds for every node a set may hold, with room to spare.
const maxDump = 64 << 20

// pull asks every live peer for its own points newer than those this node
// holds of it; the first time a peer answers, it is asked for everything
// it holds (every node's), so a node that restarts gets the cluster's past
// back, its own and the dead nodes' included.
func (s *Service) pull(ctx context.Context) {
	if s.cfg.Peers == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Interval)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range s.cl.Members() {
		if m.ID == s.self || m.PeerAddr == "" || m.Gossip != cluster.GossipAlive && m.Gossip != cluster.GossipSuspect {
			continue
		}
		s.mu.Lock()
		whole := !s.backfed
		s.backfed = true
		since := s.pulled[m.ID]
		s.mu.Unlock()
		wg.Go(func() {
			q := url.Values{"since": {strconv.FormatInt(since, 10)}, "node": {m.ID}}
			if whole {
				q = url.Values{"since": {"0"}}
			}
			d, err := s.fetch(ctx, m.PeerAddr, q)
			if err != nil {
				s.log.Debug("history pull failed", "peer", m.ID, "err", err)
				s.mu.Lock()
				if whole {
					s.backfed = false // ask the next one
				}
				s.mu.Unlock()
				return
			}
			s.merge(d)
		})
	}
	wg.Wait()
}

func (s *Service) fetch(ctx context.Context, peer string, q url.Values) (history.Dump, error) {
	var d history.Dump
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+peer+"/peer/history?"+q.Encode(), nil)
	if err != nil {
		return d, err
	}
	resp, err := s.cfg.Peers.Do(req)
	if err != nil {
		return d, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return d, fmt.Errorf("%s: %s", peer, resp.Status)
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, maxDump)).Decode(&d)
	return d, err
}

// merge adds a peer's points; this node's own series is its own to write.
func (s *Service) merge(d history.Dump) {
	s.mu.Lock()
	s.pulls++
	s.mu.Unlock()
	for id, nd := range d.Nodes {
		if id == s.self {
			s.mergeOwn(nd)
			continue
		}
		se := s.set.Series(id)
		se.Merge(nd.Fine, nd.Coarse)
		if last, ok := se.Last(); ok {
			s.mu.Lock()
			s.pulled[id] = max(s.pulled[id], last.T)
			s.mu.Unlock()
		}
	}
}

// mergeOwn takes this node's own past from a peer after a restart: only
// when the node has no more than a few points of its own yet (a series
// only moves forward, so the past must come before the present).
func (s *Service) mergeOwn(nd history.NodeDump) {
	own := s.set.Series(s.self)
	if fine, _ := own.Len(); fine > 2 || len(nd.Fine)+len(nd.Coarse) == 0 {
		return
	}
	cur, _ := own.Since(-1, -1)
	fresh := history.NewSeries()
	fresh.Merge(nd.Fine, nd.Coarse)
	fresh.Merge(cur, nil)
	s.set.Replace(s.self, fresh)
}

// pullHolder asks the dispatcher role's holder, when it is another node,
// for what it adds to its view (its front door: the policy it runs and
// its decisions), so that every node's dashboard shows the front door.
// The loop asks only while a view is drawn (a dashboard open, a program
// asking GET /ui/api/view): the first view after a quiet spell shows the
// front door a second later.
func (s *Service) pullHolder(ctx context.Context) {
	holder, _ := s.cl.Dispatcher()
	var addr string
	for _, m := range s.cl.Members() {
		if m.ID == holder && m.ID != s.self && (m.Gossip == cluster.GossipAlive || m.Gossip == cluster.GossipSuspect) {
			addr = m.PeerAddr
		}
	}
	var front json.RawMessage
	if addr != "" && s.cfg.Peers != nil {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.Interval)
		defer cancel()
		if req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/peer/monitor/extra", nil); err == nil {
			if resp, err := s.cfg.Peers.Do(req); err == nil {
				var extra map[string]json.RawMessage
				if resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&extra) == nil {
					front = extra["front"]
				}
				resp.Body.Close()
			}
		}
	}
	s.mu.Lock()
	s.holderFront, s.holderID = front, holder
	s.mu.Unlock()
}

// forgetHolder drops the holder's front door as last asked: nobody looks,
// and a figure kept from then would show as now when someone looks again.
func (s *Service) forgetHolder() {
	s.mu.Lock()
	s.holderFront, s.holderID = nil, ""
	s.mu.Unlock()
}

func (s *Service) handleExtra(w http.ResponseWriter, _ *http.Request) {
	extra := map[string]any{}
	if s.cfg.Extra != nil {
		extra = s.cfg.Extra()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(extra)
}
