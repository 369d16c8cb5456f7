package monitor

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/history"
)

// View is the cluster as this node sees it now: what the dashboard and
// `mure top` draw besides the history.
type View struct {
	// Node is the node answering; User the dashboard's user.
	Node      string `json:"node"`
	User      string `json:"user,omitempty"`
	ClusterID string `json:"cluster_id"`
	Time      int64  `json:"time"`
	// Leader is the raft leader; Dispatcher the dispatcher role's holder
	// and How the rule that chose it.
	Leader        string           `json:"leader"`
	Dispatcher    string           `json:"dispatcher"`
	DispatcherHow string           `json:"dispatcher_how"`
	Members       []cluster.Member `json:"members"`
	// Extra holds what node adds: the dispatch policy setting, this
	// node's front door and caching proxy, when it has them.
	Extra map[string]any `json:"extra,omitempty"`
	// Front is the front door of the dispatcher role's holder, this node
	// or another (frontdoor.Status: its policy and decisions by policy);
	// absent when no node holds one.
	Front json.RawMessage `json:"front,omitempty"`
	// Fields names the history's figures with their units.
	Fields []history.Field `json:"fields"`
}

// view builds the view without its user (viewJSON shares it and adds
// the asker's).
func (s *Service) view() View {
	v := View{Node: s.self, ClusterID: s.cl.ClusterID(), Time: time.Now().Unix(), Members: s.cl.Members(), Fields: history.Fields[:]}
	v.Leader, _ = s.cl.Leader()
	v.Dispatcher, v.DispatcherHow = s.cl.Dispatcher()
	if s.cfg.Extra != nil {
		v.Extra = s.cfg.Extra()
	}
	if v.Dispatcher == s.self {
		if f, ok := v.Extra["front"]; ok {
			v.Front, _ = json.Marshal(f)
		}
	} else {
		s.mu.Lock()
		if s.holderID == v.Dispatcher {
			v.Front = s.holderFront
		}
		s.mu.Unlock()
	}
	return v
}

func (u *ui) handleView(w http.ResponseWriter, r *http.Request) {
	b, err := u.s.viewJSON(r.Header.Get(userHeader))
	if err != nil {
		api.Error(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// handleEvents streams server-sent events: at once and then every second
// an "update" with the view and each node's points newer than those sent
// before (the first: the last hour's and day's). A browser reconnects by
// itself when the stream breaks; the stream ends when its session does.
func (u *ui) handleEvents(w http.ResponseWriter, r *http.Request) {
	select {
	case u.streams <- struct{}{}:
		defer func() { <-u.streams }()
	default:
		api.Unavailable(w, 5, api.CodeUnavailable, fmt.Sprintf("this node already feeds %d dashboards: try another node", maxStreams))
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	user := r.Header.Get(userHeader)
	var sent map[string][2]int64 // node → newest fine and coarse point sent; nil before the first update
	for {
		next := u.next()
		if _, ok := u.session(r); !ok {
			return
		}
		if err := u.send(w, user, &sent); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-u.done:
			return
		case <-next:
		}
	}
}

// send writes one update: the view and the points newer than sent, per
// node (a peer's points arrive a second after this node's own, so each
// node has its own mark). The first update (sent nil) carries the whole
// history, encoded once per interval for every stream and request
// (shared); *sent is then made.
func (u *ui) send(w http.ResponseWriter, user string, sent *map[string][2]int64) error {
	var hist []byte
	var err error
	if *sent == nil {
		var marks map[string][2]int64
		if hist, marks, err = u.s.historyJSON(); err != nil {
			return err
		}
		*sent = maps.Clone(marks)
		if *sent == nil {
			*sent = map[string][2]int64{}
		}
	} else if hist, err = json.Marshal(u.s.since(*sent)); err != nil {
		return err
	}
	view, err := u.s.viewJSON(user)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: update\ndata: {\"view\":%s,\"history\":%s}\n\n", view, hist)
	return err
}

// since returns each node's points newer than its mark in sent, and moves
// the marks to the newest point returned.
func (s *Service) since(sent map[string][2]int64) history.Dump {
	d := history.Dump{Nodes: map[string]history.NodeDump{}}
	for _, id := range s.set.Nodes() {
		se, ok := s.set.Lookup(id)
		if !ok {
			continue
		}
		mark := sent[id]
		fine, coarse := se.Since(mark[0], mark[1])
		if len(fine) > 0 {
			mark[0] = fine[len(fine)-1].T
		}
		if len(coarse) > 0 {
			mark[1] = coarse[len(coarse)-1].T
		}
		sent[id] = mark
		d.Nodes[id] = history.NodeDump{Fine: fine, Coarse: coarse}
	}
	return d
}
