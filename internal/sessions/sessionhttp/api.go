package sessionhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/auth/authhttp"
	"github.com/mure-dev/mure/internal/sessions"
	"github.com/mure-dev/mure/internal/sessions/holder"
)

// Paths of the client API that hold a connection open (an attached
// terminal, a web app's requests): the node's admission limit does not
// count them (its connection limit does).
const (
	AttachPrefix = "/attach/"
	WebPrefix    = "/web/"
)

func (s *Service) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /sessions", s.handleNew)
	mux.HandleFunc("GET /sessions", s.handleList)
	mux.HandleFunc("GET /sessions/{id}", s.handleGet)
	mux.HandleFunc("DELETE /sessions/{id}", s.handleKill)
	mux.HandleFunc("GET "+AttachPrefix+"{id}", s.handleAttach)
	mux.HandleFunc("POST /sessions/{id}/ticket", s.handleTicket)
	mux.Handle("GET "+TermPrefix, termHandler())
	mux.HandleFunc(WebPrefix+"{id}/", s.handleWeb)
}

// NewRequest is the body of POST /sessions.
type NewRequest struct {
	// Kind is the session's kind (default "shell").
	Kind string `json:"kind,omitempty"`
	// Cols and Rows are the terminal's first size (default 80x24).
	Cols uint16 `json:"cols,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	// Node starts the session on that node (default: where the kind's
	// place= policy says).
	Node string `json:"node,omitempty"`
	// Parent is the caller's session this one belongs to: it ends with
	// it ("": none).
	Parent string `json:"parent,omitempty"`
	// Placement is why the decider chose Node, and ID the session ID it
	// chose (peer requests only: a client's are dropped).
	Placement *sessions.Placement `json:"placement,omitempty"`
	ID        string              `json:"id,omitempty"`
	// Command runs instead of the kind's program (mure run -- CMD); only
	// a shell kind without a command of its own takes one. With a
	// command and no kind, the kind is "app" where offered, else "shell".
	Command []string `json:"command,omitempty"`
}

// maxNewBody bounds POST /sessions (a command's words included).
const maxNewBody = 64 << 10

// View is a session as the API shows it.
type View struct {
	sessions.Session
	AgeSeconds  int64   `json:"age_seconds"`
	IdleSeconds int64   `json:"idle_seconds"`
	MemoryBytes int64   `json:"memory_bytes"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	Processes   int     `json:"processes"`
	Clients     int     `json:"clients"`
	// Web is the path of a web session's app.
	Web string `json:"web,omitempty"`
}

// caller is the authenticated user and whether it is an admin.
func caller(w http.ResponseWriter, r *http.Request) (string, bool, bool) {
	p, ok := authhttp.PrincipalFrom(r.Context())
	if !ok || p.User == "" {
		writeErr(w, fmt.Errorf("%w: a session belongs to a user and runs as that user's account; this node serves without authentication (--auth=false), or the caller is anonymous", sessions.ErrNoUser))
		return "", false, false
	}
	return p.User, p.Admin, true
}

// scope is the session whose credential the caller used (mure run): it
// may only start, list, attach to and end that session's children; ""
// for a user's own credential.
func scope(r *http.Request) string {
	p, _ := authhttp.PrincipalFrom(r.Context())
	return p.Session
}

func (s *Service) handleNew(w http.ResponseWriter, r *http.Request) {
	user, _, ok := caller(w, r)
	if !ok {
		return
	}
	var req NewRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxNewBody)).Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		writeErr(w, fmt.Errorf("%w: the body must be JSON like {\"kind\":\"shell\",\"cols\":80,\"rows\":24}: %v", sessions.ErrBadRequest, err))
		return
	}
	req.Placement, req.ID = nil, ""
	if sc := scope(r); sc != "" {
		if req.Parent != "" && req.Parent != sc {
			api.Error(w, http.StatusForbidden, api.CodeForbidden, fmt.Sprintf(
				"a session's credential starts children of its own session (%s) only, not of %s", sc, req.Parent))
			return
		}
		req.Parent = sc
	}
	if req.Kind == "" && len(req.Command) > 0 {
		req.Kind = s.m.RunKind()
	}
	s.place(w, r, user, req, false)
}

// startHere starts the session on this node and answers; it returns the
// session's ID, or why it did not start.
func (s *Service) startHere(w http.ResponseWriter, r *http.Request, user string, req NewRequest) (string, error) {
	size, err := parseSize(req.Cols, req.Rows)
	if err != nil {
		writeErr(w, err)
		return "", err
	}
	if req.Parent != "" {
		s.catchUp(r.Context()) // the parent may have been started through another node a moment ago
	}
	sess, err := s.m.Start(r.Context(), user, req.Kind, size, sessions.Origin{ID: req.ID, Placement: req.Placement, Parent: req.Parent, Command: req.Command})
	if err != nil {
		writeErr(w, err)
		return "", err
	}
	api.JSON(w, http.StatusCreated, s.view(sess, nil))
	return sess.ID, nil
}

// parseSize checks a terminal size: 0x0 means the default.
func parseSize(cols, rows uint16) (holder.Size, error) {
	if cols == 0 && rows == 0 {
		return holder.Size{Cols: 80, Rows: 24}, nil
	}
	if cols == 0 || rows == 0 || cols > holder.MaxCols || rows > holder.MaxRows {
		return holder.Size{}, fmt.Errorf("%w: a terminal is 1-%d columns by 1-%d rows, not %dx%d",
			sessions.ErrBadRequest, holder.MaxCols, holder.MaxRows, cols, rows)
	}
	return holder.Size{Cols: cols, Rows: rows}, nil
}

// catchUpWait bounds how long a request waits for this node to apply what
// the leader has: a session started or killed through another node a
// moment ago is seen (read your writes); without a leader, the local
// state answers.
const catchUpWait = time.Second

func (s *Service) catchUp(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, catchUpWait)
	defer cancel()
	_ = s.cl.CatchUp(ctx)
}

func (s *Service) handleList(w http.ResponseWriter, r *http.Request) {
	user, admin, ok := caller(w, r)
	if !ok {
		return
	}
	if sc := scope(r); sc != "" { // a session's credential: its children
		api.JSON(w, http.StatusOK, s.list(r.Context(), func(x sessions.Session) bool { return x.User == user && x.Parent == sc }))
		return
	}
	api.JSON(w, http.StatusOK, s.List(r.Context(), user, admin && r.URL.Query().Get("all") != ""))
}

// List returns the sessions of user (all sessions, when all is set: an
// admin's view), with their figures from the nodes running them, once
// this node has applied what the leader has (a session started through
// another node a moment ago is listed). A View holds no secret (no
// ticket, no web app's secret): the dashboard lists sessions with it.
func (s *Service) List(ctx context.Context, user string, all bool) []View {
	return s.list(ctx, func(x sessions.Session) bool { return x.User == user || all })
}

func (s *Service) list(ctx context.Context, keep func(sessions.Session) bool) []View {
	out := []View{}
	if s.m == nil {
		return out
	}
	s.catchUp(ctx)
	var mine []sessions.Session
	for _, sess := range s.m.Records() {
		if keep(sess) {
			mine = append(mine, sess)
		}
	}
	stats := s.stats(ctx, mine)
	for _, sess := range mine {
		out = append(out, s.view(sess, stats))
	}
	return out
}

// own returns the caller's session id, answering 404 for another's.
func (s *Service) own(w http.ResponseWriter, r *http.Request, adminToo bool) (sessions.Session, string, bool) {
	user, admin, ok := caller(w, r)
	if !ok {
		return sessions.Session{}, "", false
	}
	sess, found := s.m.Record(r.PathValue("id"))
	if !found {
		s.catchUp(r.Context())
		sess, found = s.m.Record(r.PathValue("id"))
	}
	sc := scope(r)
	if !found || sess.User != user && !(adminToo && admin && sc == "") || sc != "" && sess.Parent != sc {
		writeErr(w, fmt.Errorf("%w: %s (yours are listed by mure session ls)", sessions.ErrNotFound, r.PathValue("id")))
		return sessions.Session{}, "", false
	}
	return sess, user, true
}

func (s *Service) handleGet(w http.ResponseWriter, r *http.Request) {
	sess, _, ok := s.own(w, r, true)
	if !ok {
		return
	}
	api.JSON(w, http.StatusOK, s.view(sess, s.stats(r.Context(), []sessions.Session{sess})))
}

func (s *Service) handleKill(w http.ResponseWriter, r *http.Request) {
	sess, user, ok := s.own(w, r, true)
	if !ok {
		return
	}
	if sess.Node != s.m.NodeID() && sess.State != sessions.StateLost && s.cl.Alive(sess.Node) {
		s.forward(w, r, sess.Node, http.MethodDelete, "/peer/sessions/"+sess.ID, user, nil)
		return
	}
	if err := s.m.Kill(r.Context(), sess.ID, "killed by "+user); err != nil {
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// view adds a session's figures to its record. A running session whose
// node is not alive shows as lost at once.
func (s *Service) view(sess sessions.Session, stats map[string]holder.Status) View {
	sess.CredentialHash = "" // not a secret, but of no use to a client
	v := View{Session: sess, AgeSeconds: int64(time.Since(sess.Created).Seconds())}
	if sess.State == sessions.StateRunning && !s.cl.Alive(sess.Node) {
		v.State = sessions.StateLost
	}
	if st, ok := stats[sess.ID]; ok {
		v.MemoryBytes, v.CPUSeconds, v.Processes, v.Clients = st.MemoryBytes, st.CPUSeconds, st.Processes, st.Clients
		if !st.LastActive.IsZero() {
			v.IdleSeconds = int64(time.Since(st.LastActive).Seconds())
		}
	}
	if k, ok := s.m.Kind(sess.Kind); ok && k.Type == sessions.TypeWeb {
		v.Web = sessions.WebPrefix(sess.ID)
	}
	return v
}

// writeErr answers err as the JSON error envelope.
func writeErr(w http.ResponseWriter, err error) {
	status, code := http.StatusInternalServerError, api.CodeInternal
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		status, code = http.StatusNotFound, api.CodeNotFound
	case errors.Is(err, sessions.ErrBadRequest), errors.Is(err, sessions.ErrUnknownKind):
		status, code = http.StatusBadRequest, api.CodeBadRequest
	case errors.Is(err, sessions.ErrNoUser):
		status, code = http.StatusUnauthorized, api.CodeUnauthorized
	case errors.Is(err, sessions.ErrNoAccount), errors.Is(err, sessions.ErrPrivileged), errors.Is(err, sessions.ErrCannotSwitch):
		status, code = http.StatusConflict, api.CodeConflict
	case errors.Is(err, sessions.ErrUserLimit):
		status, code = http.StatusConflict, api.CodeConflict
	case errors.Is(err, sessions.ErrFull), errors.Is(err, sessions.ErrNoNode):
		status, code = http.StatusServiceUnavailable, api.CodeUnavailable
	case errors.Is(err, holder.ErrGone):
		status, code = http.StatusNotFound, api.CodeNotFound
	}
	api.Error(w, status, code, err.Error())
}
