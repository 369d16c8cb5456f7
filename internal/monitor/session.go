package monitor

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Dashboard sessions: a login gives the browser a random 256-bit session
// ID in a cookie (HttpOnly, SameSite=Strict, Path=/ui, Secure with TLS);
// the node keeps its SHA-256, the user and, for a token login, the token,
// so that each request checks again that the user exists and the token is
// neither revoked nor expired. Sessions live in this node's memory: a
// browser logs in on the node it talks to.
const (
	cookieName  = "mure_ui"
	sessionTTL  = 12 * time.Hour
	maxSessions = 1024
)

type session struct {
	user    string
	token   string // the bearer token a token login used ("" for a password)
	expires time.Time
}

type sessions struct {
	mu  sync.Mutex
	all map[[32]byte]session
}

func newSessions() *sessions { return &sessions{all: map[[32]byte]session{}} }

// open makes a session and returns its ID.
func (s *sessions) open(user, token string, now time.Time) string {
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.all {
		if now.After(v.expires) {
			delete(s.all, k)
		}
	}
	if len(s.all) >= maxSessions {
		var oldest [32]byte
		var first bool
		for k, v := range s.all {
			if !first || v.expires.Before(s.all[oldest].expires) {
				oldest, first = k, true
			}
		}
		delete(s.all, oldest)
	}
	s.all[sha256.Sum256([]byte(id))] = session{user: user, token: token, expires: now.Add(sessionTTL)}
	return id
}

// get returns the live session of id.
func (s *sessions) get(id string, now time.Time) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := sha256.Sum256([]byte(id))
	v, ok := s.all[k]
	if ok && now.After(v.expires) {
		delete(s.all, k)
		return session{}, false
	}
	return v, ok
}

func (s *sessions) close(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.all, sha256.Sum256([]byte(id)))
}

func (s *sessions) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.all)
}

// cookie is the session cookie for id (an empty id clears it).
func cookie(id string, secure bool) *http.Cookie {
	c := &http.Cookie{Name: cookieName, Value: id, Path: "/ui", HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteStrictMode, MaxAge: int(sessionTTL / time.Second)}
	if id == "" {
		c.MaxAge = -1
	}
	return c
}
