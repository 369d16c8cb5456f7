package node

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/auth/authhttp"
	"github.com/mure-dev/mure/internal/files/filehttp"
	"github.com/mure-dev/mure/internal/sessions"
	"github.com/mure-dev/mure/internal/sessions/sessionhttp"
	"github.com/mure-dev/mure/internal/transport"
)

// auditFile is the audit log in the data directory: one JSON line per
// admin action and per failed login (who, what, when, from where).
const auditFile = "audit.log"

// nodeAuth is the node's security model on the client API.
type nodeAuth struct {
	authn *auth.Authenticator
	guard *authhttp.Guard
	admin *authhttp.Admin
	audit *os.File
}

// openAuth builds the authenticator, the guard and the /auth/ endpoints,
// and opens the audit log.
func (n *Node) openAuth(key transport.Key) error {
	sealer, err := auth.NewSealer(key[:])
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(n.cfg.DataDir, auditFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	fsm := n.cl.FSM()
	a := &nodeAuth{audit: f}
	a.authn = &auth.Authenticator{Records: fsm, Sealer: sealer, StaticToken: n.cfg.Token, Params: n.cfg.Auth.HashParams,
		Sessions: sessions.Credentials{FSM: fsm}}
	audit := slog.New(slog.NewMultiHandler(slog.NewJSONHandler(f, nil), n.log.With("part", "audit").Handler()))
	lim := auth.DefaultFailureLimiter()
	if n.cfg.Auth.LoginBurst > 0 {
		lim.Burst = n.cfg.Auth.LoginBurst
	}
	a.guard = &authhttp.Guard{Auth: a.authn, Limiter: lim, Classify: classify, Anonymous: n.cfg.Auth.AnonymousRead,
		MetricsToken: n.cfg.Auth.MetricsToken, Audit: audit,
		// A cluster upgraded with --token keeps /metrics open, as
		// before, until it sets a scrape token.
		MetricsOpen: n.cfg.Token != "" && n.cfg.Auth.MetricsToken == "",
		Current:     n.cl.HasReadLease,
		Hint:        "a node keeps an admin credential in its data directory, DATA/admin.token; mure token create makes more"}
	a.admin = &authhttp.Admin{Apply: n.cl.ApplyOp, Records: fsm, Sealer: sealer, Params: n.cfg.Auth.HashParams, Open: !n.authRequired()}
	n.auth = a
	return nil
}

// authRequired reports whether client requests must authenticate.
func (n *Node) authRequired() bool { return !n.cfg.Auth.Open || n.cfg.Token != "" }

// guarded wraps the client API in the guard when authentication is on.
// Off, a client's X-Mure-User is still dropped: an app that sees the
// header can trust that the node set it.
func (n *Node) guarded(next http.Handler) http.Handler {
	if !n.authRequired() {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del(authhttp.UserHeader)
			next.ServeHTTP(w, r)
		})
	}
	return n.auth.guard.Wrap(next)
}

// fastAllow is the check of the front and the fast read lane: a bearer
// token (or nothing, for anonymous grants) that may read key; anything
// else goes to net/http, which explains the refusal. Token checks are
// remembered while the records are unchanged (bearerCache).
func (n *Node) fastAllow() func(authorization, key string) bool {
	if !n.authRequired() {
		return nil
	}
	anon := auth.Anonymous(n.cfg.Auth.AnonymousRead)
	cache := newBearerCache()
	fsm := n.cl.FSM()
	return func(h, key string) bool {
		cred, err := authhttp.ParseAuthorization(h)
		switch {
		case err != nil:
			return false
		case cred.Scheme == authhttp.None:
			return anon.Allowed(auth.Read, key)
		case cred.Scheme == authhttp.Bearer:
			p, ok := cache.principal(cred.Token, fsm.Applied(), n.auth.authn.BearerUntil)
			return ok && p.Allowed(auth.Read, key)
		}
		return false
	}
}

// classify says what each client API request needs (docs/security.md):
// health probes nothing; metrics the scrape token or an admin; files
// their grants; changes to the cluster an admin; everything else (status,
// settings read, one's own credentials, apps) any authenticated caller.
func classify(r *http.Request) authhttp.Need {
	p := r.URL.Path
	switch {
	case p == "/healthz" || p == "/readyz", isDashboard(p):
		// The dashboard checks its own session cookie (monitor).
		return authhttp.Need{Open: true}
	case p == "/metrics":
		return authhttp.Need{Metrics: true}
	case strings.HasPrefix(p, sessionhttp.TermPrefix) && r.Method == http.MethodGet,
		strings.HasPrefix(p, sessionhttp.AttachPrefix) && r.URL.Query().Get("ticket") != "":
		// The browser terminal's page, and its WebSocket, which carries a
		// one-use ticket instead of a header (checked by the service).
		return authhttp.Need{Open: true}
	case isSessionRun(r):
		return authhttp.Need{Action: auth.Run}
	case strings.HasPrefix(p, filehttp.FilesPrefix):
		key := strings.TrimPrefix(p, filehttp.FilesPrefix)
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return authhttp.Need{Action: auth.Read, Path: key}
		}
		return authhttp.Need{Action: auth.Write, Path: key}
	case p == "/list":
		return authhttp.Need{Action: auth.Read, Path: r.URL.Query().Get("prefix")}
	case strings.HasPrefix(p, "/status/files/"):
		return authhttp.Need{Action: auth.Read, Path: strings.TrimPrefix(p, "/status/files/")}
	case strings.HasPrefix(p, "/config/") && r.Method != http.MethodGet,
		strings.HasPrefix(p, "/nodes/") && r.Method != http.MethodGet,
		strings.HasPrefix(p, "/cache/") && r.Method != http.MethodGet,
		strings.HasPrefix(p, "/debug/"):
		return authhttp.Need{Action: auth.Admin}
	}
	return authhttp.Need{Action: auth.Known}
}

func (n *Node) closeAuth() {
	if n.auth != nil && n.auth.audit != nil {
		_ = n.auth.audit.Close()
	}
}

// isSessionRun reports whether r starts, lists, shows, attaches to or
// ends sessions: what a session's credential may do (auth.Run), for its
// own children only (the sessions service checks which). Tickets and web
// apps are not among them.
func isSessionRun(r *http.Request) bool {
	p := r.URL.Path
	switch {
	case p == "/sessions":
		return r.Method == http.MethodGet || r.Method == http.MethodPost
	case strings.HasPrefix(p, "/sessions/"):
		id := strings.TrimPrefix(p, "/sessions/")
		return id != "" && !strings.Contains(id, "/") && (r.Method == http.MethodGet || r.Method == http.MethodDelete)
	case strings.HasPrefix(p, sessionhttp.AttachPrefix):
		return r.Method == http.MethodGet
	}
	return false
}
