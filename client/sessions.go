package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Session is a persistent session as the API shows it (docs/sessions.md).
type Session struct {
	ID          string    `json:"id"`
	User        string    `json:"user"`
	Kind        string    `json:"kind"`
	Node        string    `json:"node"`
	State       string    `json:"state"`
	Created     time.Time `json:"created"`
	Restarts    int       `json:"restarts,omitempty"`
	AgeSeconds  int64     `json:"age_seconds"`
	IdleSeconds int64     `json:"idle_seconds"`
	MemoryBytes int64     `json:"memory_bytes"`
	CPUSeconds  float64   `json:"cpu_seconds"`
	Processes   int       `json:"processes"`
	Clients     int       `json:"clients"`
	// Web is the path of a web session's app (empty for terminals).
	Web string `json:"web,omitempty"`
	// Parent is the session this one was started from; it ends with it.
	Parent string `json:"parent,omitempty"`
	// Command is the program asked for with mure run (empty: the kind's).
	Command []string `json:"command,omitempty"`
	// Placement is why the session went to Node (nil: the node asked, or
	// named with --on).
	Placement *Placement `json:"placement,omitempty"`
}

// Placement is how a session's node was chosen: the kind's policy, the
// node that decided, and the figures it used for each candidate.
type Placement struct {
	Policy  string            `json:"policy"`
	Decider string            `json:"decider"`
	Nodes   []PlacementFigure `json:"nodes,omitempty"`
}

// PlacementFigure is one candidate node as the decider saw it.
type PlacementFigure struct {
	Node string `json:"node"`
	// Sessions ran there; InFlight were being placed there and did not
	// show yet in what the policy compares.
	Sessions   int     `json:"sessions"`
	InFlight   int     `json:"in_flight,omitempty"`
	FreeMemory int64   `json:"free_memory_bytes,omitempty"`
	CPU        float64 `json:"cpu,omitempty"`
	RunQueue   float64 `json:"run_queue,omitempty"`
}

// NewSession asks for a session.
type NewSession struct {
	Kind       string `json:"kind,omitempty"`
	Cols, Rows uint16 `json:"-"`
	// Node starts it on that node (default: where its kind's policy says).
	Node string `json:"node,omitempty"`
	// Parent makes it belong to that session of the caller's: it ends
	// with it.
	Parent string `json:"parent,omitempty"`
	// Command runs instead of the kind's program (mure run -- CMD): only
	// in a shell kind without a command of its own.
	Command []string `json:"command,omitempty"`
}

// StartSession starts a session of the caller's and returns it.
func (c *Client) StartSession(ctx context.Context, n NewSession) (Session, error) {
	var s Session
	body := map[string]any{"kind": n.Kind, "cols": n.Cols, "rows": n.Rows, "node": n.Node, "parent": n.Parent, "command": n.Command}
	return s, c.sendJSON(ctx, http.MethodPost, "/sessions", body, &s)
}

// Sessions lists the caller's sessions (all users' for an admin with all).
func (c *Client) Sessions(ctx context.Context, all bool) ([]Session, error) {
	var out []Session
	var q url.Values
	if all {
		q = url.Values{"all": {"1"}}
	}
	return out, c.getJSON(ctx, "/sessions", q, &out)
}

// KillSession ends a session (or forgets a lost one).
func (c *Client) KillSession(ctx context.Context, id string) error {
	return c.simple(ctx, &call{method: http.MethodDelete, path: "/sessions/" + url.PathEscape(id), policy: once})
}

// SessionConn is an attached terminal: Read returns the screen first, then
// the program's output; Write sends keystrokes.
type SessionConn struct {
	ws *websocket.Conn
	// Notice receives idle warnings and the like (buffered; dropped if
	// not read).
	Notice chan string
	// Exit is set once the session ended (after Read returned io.EOF).
	Exit *SessionExit
}

// SessionExit is how an attached session ended.
type SessionExit struct {
	Code  int    `json:"code"`
	Error string `json:"error,omitempty"`
}

// ErrDetached: the connection closed while the session runs on.
var ErrDetached = errors.New("detached")

// AttachSession attaches to session id with a terminal of cols x rows, on
// the first node that answers (any node reaches the session's node).
func (c *Client) AttachSession(ctx context.Context, id string, cols, rows uint16) (*SessionConn, error) {
	var last error
	for _, base := range c.nodes {
		u := fmt.Sprintf("%s/attach/%s?cols=%d&rows=%d", base, url.PathEscape(id), cols, rows)
		u = "ws" + strings.TrimPrefix(u, "http")
		h := http.Header{"User-Agent": {"mure-client"}}
		if c.token != "" {
			h.Set("Authorization", "Bearer "+c.token)
		} else if c.user != "" {
			r := http.Request{Header: http.Header{}}
			r.SetBasicAuth(c.user, c.password)
			h.Set("Authorization", r.Header.Get("Authorization"))
		}
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ws, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: c.wsClient(), HTTPHeader: h})
		cancel()
		if err == nil {
			ws.SetReadLimit(4 << 20)
			return &SessionConn{ws: ws, Notice: make(chan string, 8)}, nil
		}
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, readAPIError(resp)
		}
		last = err
	}
	return nil, last
}

// wsClient is the client's HTTP client without its timeout (an attached
// terminal lasts).
func (c *Client) wsClient() *http.Client {
	hc := *c.hc
	hc.Timeout = 0
	return &hc
}

// Read returns the next bytes for the terminal. It returns ErrDetached
// when the connection was cut, and io.EOF-like ErrSessionEnded when the
// session ended (Exit says how).
func (s *SessionConn) Read(ctx context.Context) ([]byte, error) {
	for {
		typ, p, err := s.ws.Read(ctx)
		if err != nil {
			if s.Exit != nil {
				return nil, ErrSessionEnded
			}
			return nil, fmt.Errorf("%w: %v", ErrDetached, err)
		}
		if typ == websocket.MessageBinary {
			return p, nil
		}
		var m struct {
			Type string `json:"type"`
			Text string `json:"text"`
			SessionExit
		}
		if json.Unmarshal(p, &m) != nil {
			continue
		}
		switch m.Type {
		case "notice":
			select {
			case s.Notice <- m.Text:
			default:
			}
		case "exit":
			e := m.SessionExit
			s.Exit = &e
		}
	}
}

// ErrSessionEnded: the session's program exited (or it was killed).
var ErrSessionEnded = errors.New("the session ended")

// Write sends keystrokes.
func (s *SessionConn) Write(ctx context.Context, p []byte) error {
	return s.ws.Write(ctx, websocket.MessageBinary, p)
}

// Resize reports the terminal's size (the smallest client's wins).
func (s *SessionConn) Resize(ctx context.Context, cols, rows uint16) error {
	b, _ := json.Marshal(map[string]any{"type": "resize", "cols": cols, "rows": rows})
	return s.ws.Write(ctx, websocket.MessageText, b)
}

// Close detaches; the session runs on.
func (s *SessionConn) Close() error { return s.ws.Close(websocket.StatusNormalClosure, "detached") }
