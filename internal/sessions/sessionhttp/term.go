package sessionhttp

import (
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/api"
)

// The browser terminal (xterm.js with its fit and serialize addons), at
// /term/ (?id=ID attaches at once). Its assets are built from web/'s
// lockfile by scripts/web-build.sh internal/sessions/sessionhttp/web and
// committed.
//
//go:embed web/dist
var webDist embed.FS

// TermPrefix is where the browser terminal is served; its files are open
// (the page signs in with the user's credentials).
const TermPrefix = "/term/"

func termHandler() http.Handler {
	sub, err := fs.Sub(webDist, "web/dist")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return http.StripPrefix(TermPrefix, http.FileServerFS(sub))
}

// A browser cannot set headers on a WebSocket: the page asks for a ticket
// with its credentials (POST /sessions/ID/ticket), then opens
// /attach/ID?ticket=T. A ticket is good once, for its user and session,
// on the node that issued it, for ticketTTL.
const (
	ticketTTL  = 30 * time.Second
	maxTickets = 4096
)

type ticket struct {
	user, session string
	expires       time.Time
}

type tickets struct {
	mu  sync.Mutex
	all map[[32]byte]ticket // by the ticket's SHA-256
}

func (ts *tickets) issue(user, session string) string {
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	t := base64.RawURLEncoding.EncodeToString(raw[:])
	now := time.Now()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.all == nil {
		ts.all = map[[32]byte]ticket{}
	}
	for k, v := range ts.all {
		if now.After(v.expires) || len(ts.all) >= maxTickets {
			delete(ts.all, k)
		}
	}
	ts.all[sha256.Sum256([]byte(t))] = ticket{user: user, session: session, expires: now.Add(ticketTTL)}
	return t
}

// take spends a ticket and returns its user, if it is good for session.
func (ts *tickets) take(t, session string) (string, bool) {
	k := sha256.Sum256([]byte(t))
	ts.mu.Lock()
	defer ts.mu.Unlock()
	v, ok := ts.all[k]
	delete(ts.all, k)
	if !ok || time.Now().After(v.expires) || v.session != session {
		return "", false
	}
	return v.user, true
}

func (s *Service) handleTicket(w http.ResponseWriter, r *http.Request) {
	sess, user, ok := s.own(w, r, false)
	if !ok {
		return
	}
	api.JSON(w, http.StatusCreated, map[string]any{"ticket": s.tickets.issue(user, sess.ID), "expires_in_seconds": int(ticketTTL.Seconds())})
}
