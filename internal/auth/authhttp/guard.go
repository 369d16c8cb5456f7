package authhttp

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/auth"
)

// Need is what a request needs, as the route's owner classifies it.
type Need struct {
	// Open requests need nothing (health probes).
	Open bool
	// Metrics requests need the scrape token or an admin.
	Metrics bool
	// Action on Path (a file key or prefix, for Read and Write).
	Action auth.Action
	Path   string
}

// Guard authenticates and authorizes every request of the client API.
type Guard struct {
	// Auth checks credentials.
	Auth *auth.Authenticator
	// Classify says what a request needs.
	Classify func(r *http.Request) Need
	// Limiter slows down failed logins (nil: auth.DefaultFailureLimiter).
	Limiter *auth.FailureLimiter
	// Anonymous are the grants of callers without credentials
	// (mure serve --anonymous-read); nil: none.
	Anonymous []auth.Grant
	// MetricsToken, when set, is a bearer token that may read /metrics
	// and nothing else (a Prometheus scrape token).
	MetricsToken string
	// MetricsOpen leaves /metrics open to everyone (what --token alone
	// did before users existed).
	MetricsOpen bool
	// Audit receives one record per admin action and per failed login.
	Audit *slog.Logger
	// Hint ends the 401 message: where this node's admin credential is.
	Hint string
	// Current reports whether this node's copy of the credentials is
	// current (nil: always). A credential it cannot match while it is not
	// gets 503, not 401: the cluster may have made it (or changed the
	// password) after this node's copy — a node that has just started and
	// not yet applied its log, or one cut off from the others — and a
	// client told 401 would give up on a good credential.
	Current func() bool

	setupOnce sync.Once
	checks    chan struct{} // bounds password checks at once (argon2id is memory-hard)
}

// UserHeader carries the authenticated caller's name to what is behind
// the guard (CGI programs see HTTP_X_MURE_USER); one a client sends is
// replaced.
const UserHeader = "X-Mure-User"

type ctxKey struct{}

// PrincipalFrom returns the principal a Guard put in ctx.
func PrincipalFrom(ctx context.Context) (auth.Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(auth.Principal)
	return p, ok
}

// setup fills the defaults, once: Wrap and Password may come first.
func (g *Guard) setup() {
	g.setupOnce.Do(func() {
		if g.Limiter == nil {
			g.Limiter = auth.DefaultFailureLimiter()
		}
		if g.Audit == nil {
			g.Audit = slog.New(slog.DiscardHandler)
		}
		g.checks = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))
	})
}

// Password checks a user's password for a login outside the client API
// (the dashboard's form) as the guard checks Basic's: from another
// machine only over TLS (ErrTLSRequired), failures limited per address
// and per user (a *TooManyError while they wait), and at most a few
// argon2id checks at once, these and the client API's together.
func (g *Guard) Password(r *http.Request, user, password string) (auth.Principal, error) {
	g.setup()
	if r.TLS == nil && !Loopback(r.RemoteAddr) {
		return auth.Principal{}, ErrTLSRequired
	}
	keys := []string{"addr:" + RemoteHost(r.RemoteAddr), "user:" + user}
	if wait := g.Limiter.Wait(keys...); wait > 0 {
		return auth.Principal{}, &TooManyError{Wait: wait}
	}
	p, err := g.check(r.Context(), Credential{Scheme: Basic, User: user, Secret: password})
	if err != nil && r.Context().Err() == nil { // not a wait for a check's turn cut short
		g.Limiter.Fail(keys...)
	}
	return p, err
}

// ErrTLSRequired is Password's refusal of a password sent in clear from
// another machine.
var ErrTLSRequired = errors.New("passwords are refused over plain HTTP from another machine")

// TooManyError is Password's refusal while failed logins from the
// address or for the user wait out their delay.
type TooManyError struct{ Wait time.Duration }

func (e *TooManyError) Error() string {
	return "too many failed logins from this address or for this user: wait and try again"
}

// Wrap returns next behind the guard.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	g.setup()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		need := g.Classify(r)
		if need.Open || need.Metrics && g.MetricsOpen {
			r.Header.Del(UserHeader)
			next.ServeHTTP(w, r)
			return
		}
		p, ok := g.authenticate(w, r, need)
		if !ok {
			return
		}
		if !g.allowed(p, need) {
			g.forbid(w, r, p, need)
			return
		}
		// The credential is spent here: nothing behind the guard (an app, a
		// CGI program) sees it; they learn who the caller is instead.
		r.Header.Del("Authorization")
		r.Header.Set(UserHeader, p.Name())
		inner := r.WithContext(context.WithValue(r.Context(), ctxKey{}, p))
		// Middleware outside (the metrics) reads the route the mux found.
		defer func() { r.Pattern = inner.Pattern }()
		if need.Action == auth.Admin || strings.HasPrefix(r.URL.Path, "/auth/") && r.Method != http.MethodGet {
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			next.ServeHTTP(sw, inner)
			g.Audit.Info("admin action", "user", p.Name(), "via", p.Via, "credential", p.Credential, "method", r.Method,
				"path", r.URL.Path, "status", sw.status, "remote", r.RemoteAddr)
			return
		}
		next.ServeHTTP(w, inner)
	})
}

func (g *Guard) allowed(p auth.Principal, need Need) bool {
	if need.Metrics {
		return p.Admin || p.Via == viaScrape
	}
	return p.Allowed(need.Action, need.Path)
}

const viaScrape = "scrape_token"

// authenticate finds the caller, or answers 400/401/429 and returns false.
func (g *Guard) authenticate(w http.ResponseWriter, r *http.Request, need Need) (auth.Principal, bool) {
	cred, err := ParseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		g.unauthorized(w, err.Error())
		return auth.Principal{}, false
	}
	switch cred.Scheme {
	case None:
		anon := auth.Anonymous(g.Anonymous)
		if !need.Metrics && anon.Allowed(need.Action, need.Path) {
			return anon, true
		}
		g.unauthorized(w, "this request needs a credential: send 'Authorization: Bearer TOKEN' (mure token create), or a user's password by Basic over TLS")
		return auth.Principal{}, false
	case Bearer:
		if need.Metrics && g.MetricsToken != "" && subtle.ConstantTimeCompare([]byte(cred.Token), []byte(g.MetricsToken)) == 1 {
			return auth.Principal{User: "metrics", Via: viaScrape}, true
		}
	case Basic:
		if r.TLS == nil && !Loopback(r.RemoteAddr) {
			api.Error(w, http.StatusUnauthorized, api.CodeTLSRequired,
				"passwords and access key secrets are refused over plain HTTP from another machine: use TLS (https://, mure serve --tls-cert) or a bearer token")
			return auth.Principal{}, false
		}
	}
	// Failed passwords and key secrets are limited per address and per
	// user; bearer tokens are not (256 random bits cannot be guessed, and
	// a wrong one costs a hash and a lookup).
	var keys []string
	if cred.Scheme == Basic {
		keys = []string{"addr:" + RemoteHost(r.RemoteAddr), "user:" + cred.User}
	}
	if wait := g.Limiter.Wait(keys...); wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)+1))
		api.Error(w, http.StatusTooManyRequests, api.CodeTooManyAttempts, "too many failed logins from this address or for this user: wait and try again")
		return auth.Principal{}, false
	}
	p, err := g.check(r.Context(), cred)
	if err != nil {
		g.Limiter.Fail(keys...)
		g.Audit.Warn("login failed", "user", cred.User, "remote", r.RemoteAddr, "err", err)
		switch {
		case errors.Is(err, auth.ErrUnauthenticated) && g.Current != nil && !g.Current():
			w.Header().Set("Retry-After", "1")
			api.Error(w, http.StatusServiceUnavailable, api.CodeNoQuorum,
				"this node cannot check that credential now: its copy of the cluster's users and tokens may be behind (it is starting or cut off from the other nodes); retry, or ask another node")
		case errors.Is(err, auth.ErrUnauthenticated), errors.Is(err, auth.ErrMalformed):
			g.unauthorized(w, err.Error())
		default:
			api.Error(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
		}
		return auth.Principal{}, false
	}
	return p, true
}

func (g *Guard) check(ctx context.Context, cred Credential) (auth.Principal, error) {
	if cred.Scheme == Bearer {
		return g.Auth.Bearer(cred.Token)
	}
	select {
	case g.checks <- struct{}{}:
		defer func() { <-g.checks }()
	case <-ctx.Done():
		return auth.Principal{}, ctx.Err()
	}
	return g.Auth.Basic(cred.User, cred.Secret)
}

func (g *Guard) unauthorized(w http.ResponseWriter, msg string) {
	if g.Hint != "" {
		msg += " (" + g.Hint + ")"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="mure", Basic realm="mure"`)
	api.Error(w, http.StatusUnauthorized, api.CodeUnauthorized, msg)
}

func (g *Guard) forbid(w http.ResponseWriter, r *http.Request, p auth.Principal, need Need) {
	var msg string
	switch {
	case p.Session != "":
		msg = fmt.Sprintf("a session's credential (%s, of session %s) may only start, list, attach to and end that session's own children (mure run); %s %s needs the user's own credential",
			p.Name(), p.Session, r.Method, r.URL.Path)
	case need.Metrics:
		msg = p.Name() + " may not read /metrics: it needs the scrape token (mure serve --metrics-token) or an admin"
	case need.Action == auth.Admin:
		msg = p.Name() + " may not " + r.Method + " " + r.URL.Path + ": it needs an admin"
	case need.Action == auth.Known:
		msg = r.Method + " " + r.URL.Path + " needs a user's credential"
	default:
		msg = fmt.Sprintf("%s may not %s %q: %s", p.Name(), need.Action, need.Path, grantsText(p.Grants))
	}
	if p.Via == auth.ViaAnonymous {
		g.unauthorized(w, msg)
		return
	}
	api.Error(w, http.StatusForbidden, api.CodeForbidden, msg)
}

func grantsText(gs []auth.Grant) string {
	if len(gs) == 0 {
		return "it holds no grant (an admin gives one: mure user grant)"
	}
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = g.String()
	}
	return "its grants are " + strings.Join(s, ", ")
}

// RemoteHost is the host of a request's RemoteAddr (the address itself
// when it has no port).
func RemoteHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// Loopback reports whether a request's RemoteAddr is on this machine.
func Loopback(addr string) bool {
	ip := net.ParseIP(RemoteHost(addr))
	return ip != nil && ip.IsLoopback()
}

// statusWriter remembers the status of an audited answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
