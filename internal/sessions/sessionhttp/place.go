package sessionhttp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/sessions"
)

// placePath is the decider's peer route: place a new session and start
// it (docs/decisions/0033).
const placePath = "/peer/sessions/place"

// figures returns the members and their latest gossiped figures.
func (s *Service) figures() ([]string, map[string]sessions.Figures) {
	var ids []string
	figs := map[string]sessions.Figures{}
	for _, m := range s.cl.Members() {
		ids = append(ids, m.ID)
		if l := m.Load; l != nil {
			figs[m.ID] = sessions.Figures{CPU: l.CPU, RunQueue: l.RunQueue, FreeMemory: l.FreeMemory, At: l.Time()}
		}
	}
	return ids, figs
}

// place starts a new session where its kind's policy says. A kind placed
// by load is decided by the dispatcher role's holder, which counts the
// placements in flight; this node decides itself when it holds the role,
// when the request came from another node (viaPeer), or when the holder
// does not answer.
func (s *Service) place(w http.ResponseWriter, r *http.Request, user string, req NewRequest, viaPeer bool) {
	me, fallback := s.m.NodeID(), ""
	if req.Node == "" && !viaPeer && s.m.PlacePolicy(req.Kind) != sessions.PlaceAsked {
		if d, _ := s.cl.Dispatcher(); d != "" && d != me {
			resp, err := s.call(r, d, http.MethodPost, placePath, user, req)
			if err == nil {
				relay(w, resp)
				return
			}
			s.log.Warn("the dispatcher did not answer a placement: deciding here", "dispatcher", d, "err", err)
			fallback = " (the dispatcher " + d + " did not answer)"
		}
	}
	ids, figs := s.figures()
	dec, err := s.m.Decide(r.Context(), user, req.Kind, req.Node, ids, figs)
	if err != nil {
		writeErr(w, err)
		return
	}
	if dec.Placement != nil {
		dec.Placement.Decider += fallback
	}
	req.Node, req.Placement, req.ID = dec.Node, dec.Placement, dec.ID
	if dec.Node == me {
		id, err := s.startHere(w, r, user, req)
		s.m.Placed(dec, id, errText(err))
		return
	}
	resp, err := s.call(r, dec.Node, http.MethodPost, "/peer/sessions", user, req)
	if err != nil {
		s.m.Placed(dec, "", err.Error())
		api.Error(w, http.StatusBadGateway, api.CodeBadGateway, err.Error())
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var v View
	why := ""
	if err != nil || resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &v) != nil {
		v.ID, why = "", fmt.Sprintf("node %s answered %d: %s", dec.Node, resp.StatusCode, bytes.TrimSpace(body))
	}
	s.m.Placed(dec, v.ID, why)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	relay(w, resp)
}

// peerPlace is the decider's side of place.
func (s *Service) peerPlace(w http.ResponseWriter, r *http.Request) {
	var req NewRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
		writeErr(w, fmt.Errorf("%w: %v", sessions.ErrBadRequest, err))
		return
	}
	s.place(w, r, r.Header.Get(userHeader), req, true)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
