package node

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/auth/authhttp"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/monitor"
)

// uiConfig is the dashboard's login, on the node's security model
// (docs/decisions/0030-dashboard-login.md): a user's password (over TLS
// or from this machine, with the failed-login limits of the client API)
// or a bearer token; every user may look, read-only ones included.
func (n *Node) uiConfig() monitor.UIConfig {
	if !n.authRequired() {
		return monitor.UIConfig{Open: true}
	}
	return monitor.UIConfig{Login: n.uiLogin, Check: n.uiCheck}
}

func (n *Node) uiLogin(r *http.Request, user, password, token string) (string, error) {
	g := n.auth.guard
	if token != "" {
		p, err := n.uiBearer(token)
		if err != nil {
			g.Audit.Warn("dashboard login failed", "via", "token", "remote", r.RemoteAddr, "err", err)
			if errors.Is(err, errUISession) {
				return "", &monitor.LoginError{Status: http.StatusForbidden, Code: api.CodeForbidden, Message: err.Error()}
			}
			return "", &monitor.LoginError{Status: http.StatusUnauthorized, Code: api.CodeUnauthorized, Message: err.Error()}
		}
		g.Audit.Info("dashboard login", "user", p.Name(), "via", p.Via, "credential", p.Credential, "remote", r.RemoteAddr)
		return p.Name(), nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second) // the wait for a check's turn
	defer cancel()
	p, err := g.Password(r.WithContext(ctx), user, password)
	var many *authhttp.TooManyError
	switch {
	case errors.Is(err, authhttp.ErrTLSRequired):
		return "", &monitor.LoginError{Status: http.StatusUnauthorized, Code: api.CodeTLSRequired,
			Message: "passwords are refused over plain HTTP from another machine: use https:// (mure serve --tls-cert), or log in with a token"}
	case errors.As(err, &many):
		return "", &monitor.LoginError{Status: http.StatusTooManyRequests, Code: api.CodeTooManyAttempts, RetryAfter: many.Wait, Message: many.Error()}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "", &monitor.LoginError{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "too many logins at once: try again"}
	case err != nil:
		g.Audit.Warn("dashboard login failed", "user", user, "remote", r.RemoteAddr, "err", err)
		return "", &monitor.LoginError{Status: http.StatusUnauthorized, Code: api.CodeUnauthorized, Message: "wrong user or password"}
	}
	g.Audit.Info("dashboard login", "user", p.Name(), "via", p.Via, "remote", r.RemoteAddr)
	return p.Name(), nil
}

// uiCheck says whether a dashboard session still stands: its token is
// still good, or its user still exists.
func (n *Node) uiCheck(user, token string) error {
	if token != "" {
		_, err := n.uiBearer(token)
		return err
	}
	var ok bool
	n.cl.FSM().ReadPart(auth.NS, func(mp meta.Part) { ok = mp.(*auth.Part).User(user) != nil })
	if !ok {
		return auth.ErrUnauthenticated
	}
	return nil
}

// errUISession refuses a session's credential at the dashboard's login.
var errUISession = errors.New("a session's credential (MURE_SESSION_TOKEN) may only run that session's children (mure run), not open the dashboard: log in with the user's own token or password")

// uiBearer is the caller of a dashboard token: one that may use the API,
// as the guard asks of /status and /history. A session's credential
// authenticates too, but may only Run (decision 0045), and the dashboard
// is outside the guard.
func (n *Node) uiBearer(token string) (auth.Principal, error) {
	p, err := n.auth.authn.Bearer(token)
	if err == nil && !p.Allowed(auth.Known, "") {
		return auth.Principal{}, errUISession
	}
	return p, err
}

// isDashboard reports whether path is the dashboard's (it authenticates
// its own way: a session cookie) or the root, which sends browsers there.
func isDashboard(path string) bool {
	return path == "/" || path == "/ui" || strings.HasPrefix(path, "/ui/")
}
