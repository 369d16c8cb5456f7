package node

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/auth"
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

// uiChecks bounds the password checks of dashboard logins at once
// (argon2id is memory-hard).
var uiChecks = make(chan struct{}, 2)

func (n *Node) uiLogin(r *http.Request, user, password, token string) (string, error) {
	g := n.auth.guard
	if token != "" {
		p, err := n.auth.authn.Bearer(token)
		if err != nil {
			g.Audit.Warn("dashboard login failed", "via", "token", "remote", r.RemoteAddr, "err", err)
			return "", &monitor.LoginError{Status: http.StatusUnauthorized, Code: api.CodeUnauthorized, Message: err.Error()}
		}
		g.Audit.Info("dashboard login", "user", p.Name(), "via", p.Via, "credential", p.Credential, "remote", r.RemoteAddr)
		return p.Name(), nil
	}
	if r.TLS == nil && !fromLoopback(r.RemoteAddr) {
		return "", &monitor.LoginError{Status: http.StatusUnauthorized, Code: api.CodeTLSRequired,
			Message: "passwords are refused over plain HTTP from another machine: use https:// (mure serve --tls-cert), or log in with a token"}
	}
	keys := []string{"addr:" + hostOf(r.RemoteAddr), "user:" + user}
	if wait := g.Limiter.Wait(keys...); wait > 0 {
		return "", &monitor.LoginError{Status: http.StatusTooManyRequests, Code: api.CodeTooManyAttempts, RetryAfter: wait,
			Message: "too many failed logins from this address or for this user: wait and try again"}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	select {
	case uiChecks <- struct{}{}:
		defer func() { <-uiChecks }()
	case <-ctx.Done():
		return "", &monitor.LoginError{Status: http.StatusServiceUnavailable, Code: api.CodeUnavailable, Message: "too many logins at once: try again"}
	}
	p, err := n.auth.authn.Basic(user, password)
	if err != nil {
		g.Limiter.Fail(keys...)
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
		_, err := n.auth.authn.Bearer(token)
		return err
	}
	var ok bool
	n.cl.FSM().ReadPart(auth.NS, func(mp meta.Part) { ok = mp.(*auth.Part).User(user) != nil })
	if !ok {
		return auth.ErrUnauthenticated
	}
	return nil
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

func fromLoopback(addr string) bool {
	ip := net.ParseIP(hostOf(addr))
	return ip != nil && ip.IsLoopback()
}

// isDashboard reports whether path is the dashboard's (it authenticates
// its own way: a session cookie) or the root, which sends browsers there.
func isDashboard(path string) bool {
	return path == "/" || path == "/ui" || strings.HasPrefix(path, "/ui/")
}
