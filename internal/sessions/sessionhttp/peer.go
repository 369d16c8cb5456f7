package sessionhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/sessions"
	"github.com/mure-dev/mure/internal/sessions/holder"
)

// userHeader names the user a peer request acts for; the entry node
// authenticated it (the peer port admits only holders of the cluster key).
const userHeader = "X-Mure-Session-User"

// appliedHeader carries the state machine index the entry node had
// applied when it sent a request here: the session records it acted on.
const appliedHeader = "X-Mure-Session-Applied"

// peerCatchUpWait bounds how long a peer request waits for this node to
// apply what the entry node had. A node just restarted applies its log
// only once the leader reaches it, which can take seconds (the leader
// backs off from a node that was down).
const peerCatchUpWait = 5 * time.Second

func (s *Service) peerRoutes(mux *http.ServeMux) {
	for pattern, h := range map[string]http.HandlerFunc{
		"POST /peer/sessions":        s.peerNew,
		"POST " + placePath:          s.peerPlace,
		"DELETE /peer/sessions/{id}": s.peerKill,
		"GET /peer/sessions/stats":   s.peerStats,
		"GET /peer/attach/{id}":      s.peerAttach,
		"/peer/web/{id}/":            s.peerWeb,
	} {
		mux.Handle(pattern, s.caughtUp(h))
	}
}

// peerHeader is the header of a request made on another node for user.
func (s *Service) peerHeader(h http.Header, user string) http.Header {
	h.Set(userHeader, user)
	h.Set(appliedHeader, strconv.FormatUint(s.cl.FSM().Applied(), 10))
	return h
}

// caughtUp runs h once this node has applied what the node that sent the
// request had (read its writes): a session the entry node sees running
// here is known here too, even on a node that has just restarted.
func (s *Service) caughtUp(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if idx, err := strconv.ParseUint(r.Header.Get(appliedHeader), 10, 64); err == nil {
			ctx, cancel := context.WithTimeout(r.Context(), peerCatchUpWait)
			_ = s.cl.FSM().WaitApplied(ctx, idx)
			cancel()
		}
		h(w, r)
	})
}

func (s *Service) peerNew(w http.ResponseWriter, r *http.Request) {
	var req NewRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
		writeErr(w, fmt.Errorf("%w: %v", sessions.ErrBadRequest, err))
		return
	}
	_, _ = s.startHere(w, r, r.Header.Get(userHeader), req)
}

func (s *Service) peerKill(w http.ResponseWriter, r *http.Request) {
	if err := s.m.Kill(r.Context(), r.PathValue("id"), "killed by "+r.Header.Get(userHeader)); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) peerStats(w http.ResponseWriter, _ *http.Request) {
	api.JSON(w, http.StatusOK, s.m.Stats())
}

// peerAddr is a node's peer address.
func (s *Service) peerAddr(node string) (string, error) {
	for _, m := range s.cl.Members() {
		if m.ID == node && m.PeerAddr != "" {
			return m.PeerAddr, nil
		}
	}
	return "", fmt.Errorf("node %s is not known to this node", node)
}

// forward makes the request on node's peer API and relays the answer.
func (s *Service) forward(w http.ResponseWriter, r *http.Request, node, method, path, user string, body any) {
	resp, err := s.call(r, node, method, path, user, body)
	if err != nil {
		api.Error(w, http.StatusBadGateway, api.CodeBadGateway, err.Error())
		return
	}
	relay(w, resp)
}

// call makes the request on node's peer API for user.
func (s *Service) call(r *http.Request, node, method, path, user string, body any) (*http.Response, error) {
	addr, err := s.peerAddr(node)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(r.Context(), method, "http://"+addr+path, rd)
	if err != nil {
		return nil, err
	}
	s.peerHeader(req.Header, user)
	resp, err := s.peer.Do(req)
	if err != nil {
		return nil, fmt.Errorf("node %s (%s) could not be reached: %w", node, addr, err)
	}
	return resp, nil
}

// relay copies a peer's answer to w and closes it.
func relay(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	for _, h := range []string{"Content-Type", "X-Content-Type-Options"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// statsWait bounds how long a listing waits for another node's figures.
const statsWait = time.Second

// stats gathers the figures of the nodes that run sessions of list: this
// node's own, and each other live node's over the peer port (a node that
// does not answer in time shows zeros).
func (s *Service) stats(ctx context.Context, list []sessions.Session) map[string]holder.Status {
	out := s.m.Stats()
	nodes := map[string]bool{}
	for _, sess := range list {
		if sess.Node != s.m.NodeID() && s.cl.Alive(sess.Node) {
			nodes[sess.Node] = true
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(ctx, statsWait)
	defer cancel()
	for n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			addr, err := s.peerAddr(n)
			if err != nil {
				return
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/peer/sessions/stats", nil)
			resp, err := s.peer.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var st map[string]holder.Status
			if json.NewDecoder(resp.Body).Decode(&st) == nil {
				mu.Lock()
				for id, v := range st {
					out[id] = v
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}
