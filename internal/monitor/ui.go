package monitor

import (
	"embed"
	"errors"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/api"
)

//go:embed web/dist
var dist embed.FS

// UIConfig is how the dashboard authenticates a browser; node fills it
// from its security model (docs/decisions/0030-dashboard-login.md).
type UIConfig struct {
	// Open leaves the dashboard open to everyone (authentication off).
	Open bool
	// Login checks a user's password, or a bearer token, typed into the
	// login form, with the node's limits on failed logins and its TLS
	// rule for passwords; it returns the user's name or a *LoginError.
	Login func(r *http.Request, user, password, token string) (string, error)
	// Check says whether a session is still good: its user exists and
	// its token (token logins) is neither revoked nor expired.
	Check func(user, token string) error
}

// LoginError is a refused login, as the client API answers it.
type LoginError struct {
	Status     int
	Code       string
	Message    string
	RetryAfter time.Duration
}

func (e *LoginError) Error() string { return e.Message }

// maxStreams bounds the dashboards this node feeds at once: their own
// budget, apart from the client API's limits.
const maxStreams = 64

// ui is the dashboard: static pages and the data they ask for.
type ui struct {
	s        *Service
	cfg      UIConfig
	sessions *sessions
	static   http.Handler
	streams  chan struct{}
	csrf     *http.CrossOriginProtection

	mu   sync.Mutex
	tick chan struct{} // closed and replaced at each publish
	done chan struct{} // closed at stop
	once sync.Once
}

func newUI(s *Service, cfg UIConfig) *ui {
	sub, err := fs.Sub(dist, "web/dist")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	return &ui{s: s, cfg: cfg, sessions: newSessions(), static: http.StripPrefix("/ui/", http.FileServerFS(sub)),
		streams: make(chan struct{}, maxStreams), csrf: http.NewCrossOriginProtection(),
		tick: make(chan struct{}), done: make(chan struct{})}
}

func (u *ui) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", u.handleRoot)
	mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	mux.HandleFunc("GET /ui/", u.handleStatic)
	mux.Handle("POST /ui/login", u.csrf.Handler(http.HandlerFunc(u.handleLogin)))
	mux.Handle("POST /ui/logout", u.csrf.Handler(http.HandlerFunc(u.handleLogout)))
	mux.HandleFunc("GET /ui/api/view", u.authed(u.handleView))
	mux.HandleFunc("GET /ui/api/history", u.authed(u.s.handleHistory))
	mux.HandleFunc("GET /ui/api/events", u.authed(u.handleEvents))
	mux.HandleFunc("GET /ui/api/sessions", u.authed(u.handleSessions))
}

// handleSessions answers the sessions the user may see (the page asks
// every few seconds; they are not in the event stream, which every
// dashboard gets each second).
func (u *ui) handleSessions(w http.ResponseWriter, r *http.Request) {
	var list any = []any{}
	if u.s.cfg.Sessions != nil {
		list = u.s.cfg.Sessions(r.Context(), r.Header.Get(userHeader))
	}
	api.JSON(w, http.StatusOK, list)
}

// handleRoot sends a browser asking for / to the dashboard; a program
// gets the usual unknown-route answer.
func (u *ui) handleRoot(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.Header.Get("Accept"), "text/html") {
		http.Redirect(w, r, "/ui/", http.StatusFound)
		return
	}
	api.NotFound(w, r)
}

func (u *ui) handleStatic(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Only this node's own scripts and styles; no framing (clickjacking).
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	u.static.ServeHTTP(w, r)
}

// handleLogin takes the login form (user and password, or token) and
// opens a session.
func (u *ui) handleLogin(w http.ResponseWriter, r *http.Request) {
	if u.cfg.Open {
		api.JSON(w, http.StatusOK, map[string]string{"user": "anonymous", "note": "authentication is off: the dashboard is open"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "the login is a form of user and password, or token, under 8 KiB")
		return
	}
	user, password, token := r.PostForm.Get("user"), r.PostForm.Get("password"), strings.TrimSpace(r.PostForm.Get("token"))
	if token == "" && (user == "" || password == "") {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "give a user and its password, or a token (mure token create)")
		return
	}
	name, err := u.cfg.Login(r, user, password, token)
	if err != nil {
		var le *LoginError
		if !errors.As(err, &le) {
			le = &LoginError{Status: http.StatusInternalServerError, Code: api.CodeInternal, Message: err.Error()}
		}
		if le.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(le.RetryAfter/time.Second)+1))
		}
		api.Error(w, le.Status, le.Code, le.Message)
		return
	}
	id := u.sessions.open(name, token, time.Now())
	http.SetCookie(w, cookie(id, r.TLS != nil))
	api.JSON(w, http.StatusOK, map[string]string{"user": name})
}

func (u *ui) handleLogout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		u.sessions.close(c.Value)
	}
	http.SetCookie(w, cookie("", r.TLS != nil))
	w.WriteHeader(http.StatusNoContent)
}

// authed lets a request with a good session through (any request when
// the dashboard is open); others get 401, and the cookie is cleared.
func (u *ui) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if u.cfg.Open {
			r.Header.Del(userHeader) // no user: a client's own is not believed
			next(w, r)
			return
		}
		if _, err := r.Cookie(cookieName); err != nil {
			api.Error(w, http.StatusUnauthorized, api.CodeUnauthorized, "log in to see the dashboard")
			return
		}
		sess, ok := u.session(r)
		if !ok {
			http.SetCookie(w, cookie("", r.TLS != nil))
			api.Error(w, http.StatusUnauthorized, api.CodeUnauthorized, "the session ended: log in again")
			return
		}
		r.Header.Set(userHeader, sess.user)
		next(w, r)
	}
}

// session returns the request's live session: its cookie names one that
// has not expired, whose user still exists and whose token is still good
// (a session that fails the check is closed). An open dashboard has one
// always. The event stream asks again at each update, so that logging
// out, revoking the token or deleting the user ends a stream already open.
func (u *ui) session(r *http.Request) (session, bool) {
	if u.cfg.Open {
		return session{}, true
	}
	c, err := r.Cookie(cookieName)
	if err != nil {
		return session{}, false
	}
	sess, ok := u.sessions.get(c.Value, time.Now())
	if ok && u.cfg.Check != nil {
		if err := u.cfg.Check(sess.user, sess.token); err != nil {
			u.sessions.close(c.Value)
			ok = false
		}
	}
	return sess, ok
}

// userHeader carries the session's user to the handlers (set by authed
// only; a client's own is replaced).
const userHeader = "X-Mure-User"

// publish wakes the event streams (once a second, after sampling).
func (u *ui) publish() {
	u.mu.Lock()
	close(u.tick)
	u.tick = make(chan struct{})
	u.mu.Unlock()
}

func (u *ui) next() <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tick
}

// stop ends the event streams.
func (u *ui) stop() { u.once.Do(func() { close(u.done) }) }
