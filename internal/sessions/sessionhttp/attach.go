package sessionhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/sessions"
	"github.com/mure-dev/mure/internal/sessions/holder"
)

// Control is a text message on the attach WebSocket.
type Control struct {
	// Type is "resize" (client), "notice" or "exit" (server).
	Type string `json:"type"`
	Cols uint16 `json:"cols,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	Text string `json:"text,omitempty"`
	Code int    `json:"code,omitempty"`
	// Error says how the session ended (exit).
	Error string `json:"error,omitempty"`
}

// writeWait bounds one write to a client: one that reads nothing for this
// long is cut (the session never waits for it: see holder's queues).
const writeWait = 30 * time.Second

// readLimit bounds one message from a client (keystrokes, a paste).
const readLimit = 1 << 20

func querySize(r *http.Request) (holder.Size, error) {
	q := r.URL.Query()
	c, _ := strconv.Atoi(q.Get("cols"))
	rw, _ := strconv.Atoi(q.Get("rows"))
	if c < 0 || rw < 0 || c > 65535 || rw > 65535 {
		return holder.Size{}, fmt.Errorf("%w: cols=%s rows=%s", sessions.ErrBadRequest, q.Get("cols"), q.Get("rows"))
	}
	return parseSize(uint16(c), uint16(rw))
}

// handleAttach attaches the caller to its session, here or relayed to the
// session's node. Errors before the upgrade are JSON like every answer.
func (s *Service) handleAttach(w http.ResponseWriter, r *http.Request) {
	var sess sessions.Session
	var user string
	var ok bool
	if t := r.URL.Query().Get("ticket"); t != "" {
		sess, user, ok = s.ticketed(w, r, t)
	} else {
		sess, user, ok = s.own(w, r, false)
	}
	if !ok {
		return
	}
	size, err := querySize(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	if sess.State == sessions.StateLost || sess.State == sessions.StateRunning && !s.cl.Alive(sess.Node) {
		api.Error(w, http.StatusGone, api.CodeNotFound, fmt.Sprintf("%v: session %s ran on node %s, which is gone; mure session kill %s forgets it",
			sessions.ErrLost, sess.ID, sess.Node, sess.ID))
		return
	}
	if sess.Node == s.m.NodeID() {
		s.attachHere(w, r, sess.ID, size)
		return
	}
	addr, err := s.peerAddr(sess.Node)
	if err != nil {
		api.Error(w, http.StatusBadGateway, api.CodeBadGateway, err.Error())
		return
	}
	u := fmt.Sprintf("http://%s/peer/attach/%s?cols=%d&rows=%d", addr, url.PathEscape(sess.ID), size.Cols, size.Rows)
	dctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	up, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: s.peer, HTTPHeader: s.peerHeader(http.Header{}, user)})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			writeErr(w, fmt.Errorf("%w: %s (it may have just ended)", sessions.ErrNotFound, sess.ID))
			return
		}
		api.Error(w, http.StatusBadGateway, api.CodeBadGateway, fmt.Sprintf("node %s could not be reached for session %s: %v", sess.Node, sess.ID, err))
		return
	}
	up.SetReadLimit(readLimit)
	down, err := websocket.Accept(w, r, nil)
	if err != nil {
		up.CloseNow()
		return
	}
	down.SetReadLimit(readLimit)
	s.relay(down, up)
}

func (s *Service) peerAttach(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.m.Record(r.PathValue("id"))
	if !ok || sess.User != r.Header.Get(userHeader) {
		writeErr(w, fmt.Errorf("%w: %s", sessions.ErrNotFound, r.PathValue("id")))
		return
	}
	size, err := querySize(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	s.attachHere(w, r, sess.ID, size)
}

// attachHere serves a WebSocket client of a session whose holder runs on
// this node.
func (s *Service) attachHere(w http.ResponseWriter, r *http.Request, id string, size holder.Size) {
	hc, err := s.m.Attach(r.Context(), id, size)
	if err != nil {
		writeErr(w, err)
		return
	}
	ws, err := websocket.Accept(w, r, nil) // the Origin must be this host
	if err != nil {
		hc.Close()
		return
	}
	ws.SetReadLimit(readLimit)
	s.wg.Add(1)
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	written := make(chan struct{})
	go func() {
		defer close(written)
		defer cancel()
		s.toClient(ctx, ws, hc)
	}()
	defer func() {
		ws.CloseNow()
		hc.Close()
		<-written
	}()
	for {
		typ, p, err := ws.Read(ctx)
		if err != nil {
			return
		}
		switch typ {
		case websocket.MessageBinary:
			err = hc.Input(p)
		case websocket.MessageText:
			var c Control
			if json.Unmarshal(p, &c) == nil && c.Type == "resize" {
				// A size of nothing (0x0) is ignored; too large, clamped.
				err = hc.Resize(holder.Size{Cols: c.Cols, Rows: c.Rows})
			}
		}
		if err != nil {
			return
		}
	}
}

// toClient copies the holder's frames to the WebSocket.
func (s *Service) toClient(ctx context.Context, ws *websocket.Conn, hc *holder.Conn) {
	for {
		typ, p, err := hc.Next()
		if err != nil {
			ws.Close(websocket.StatusGoingAway, "the session's holder went away")
			return
		}
		wctx, cancel := context.WithTimeout(ctx, writeWait)
		switch typ {
		case holder.FrameScreen, holder.FrameOutput:
			err = ws.Write(wctx, websocket.MessageBinary, p)
		case holder.FrameNotice:
			err = writeControl(wctx, ws, Control{Type: "notice", Text: string(p)})
		case holder.FrameExit:
			var e holder.Exit
			_ = json.Unmarshal(p, &e)
			err = writeControl(wctx, ws, Control{Type: "exit", Code: e.Code, Error: e.Error})
			if err == nil {
				ws.Close(websocket.StatusNormalClosure, "the session ended")
			}
			cancel()
			return
		}
		cancel()
		if err != nil {
			ws.CloseNow()
			return
		}
	}
}

func writeControl(ctx context.Context, ws *websocket.Conn, c Control) error {
	b, _ := json.Marshal(c)
	return ws.Write(ctx, websocket.MessageText, b)
}

// relay copies messages both ways between a client and the session's node.
func (s *Service) relay(down, up *websocket.Conn) {
	s.wg.Add(1)
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	done := make(chan struct{}, 2)
	pipe := func(from, to *websocket.Conn) {
		defer func() { done <- struct{}{} }()
		for {
			typ, p, err := from.Read(ctx)
			if err != nil {
				var ce websocket.CloseError
				if errors.As(err, &ce) {
					to.Close(ce.Code, ce.Reason)
				}
				return
			}
			wctx, c := context.WithTimeout(ctx, writeWait)
			err = to.Write(wctx, typ, p)
			c()
			if err != nil {
				return
			}
		}
	}
	go pipe(down, up)
	go pipe(up, down)
	<-done
	cancel()
	down.CloseNow()
	up.CloseNow()
	<-done
}

// ticketed checks a browser's ticket (see term.go) for the session asked.
func (s *Service) ticketed(w http.ResponseWriter, r *http.Request, t string) (sessions.Session, string, bool) {
	id := r.PathValue("id")
	user, ok := s.tickets.take(t, id)
	sess, found := s.m.Record(id)
	if !ok || !found || sess.User != user {
		api.Error(w, http.StatusUnauthorized, api.CodeUnauthorized,
			"this attach ticket is unknown, spent, expired or for another session: ask for another (POST /sessions/ID/ticket)")
		return sessions.Session{}, "", false
	}
	return sess, user, true
}
