package auth

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// Records reads the auth namespace's part under the state machine's lock;
// meta.FSM is one.
type Records interface {
	ReadPart(ns string, fn func(p meta.Part)) bool
}

// Authenticator checks credentials against the replicated records.
type Authenticator struct {
	// Records is the state the credentials are checked against.
	Records Records
	// Sealer opens access key secrets.
	Sealer *Sealer
	// StaticToken, when set, is an admin bearer token from the node's
	// configuration (the deprecated --token).
	StaticToken string
	// Now is the clock for expiry (nil: time.Now).
	Now func() time.Time
	// Params are the hash parameters of the check made for an unknown
	// user (so it costs what a real one does); zero: DefaultHashParams.
	Params HashParams
	// Sessions checks the credentials of sessions (mure run), told apart
	// by their form; nil: they are refused.
	Sessions SessionCredentials

	dummyOnce sync.Once
	dummy     string
}

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Authenticator) part(fn func(p *Part)) {
	a.Records.ReadPart(NS, func(mp meta.Part) { fn(mp.(*Part)) })
}

// SessionCredentials checks a session's credential: the user and the
// session it belongs to, or an error while the session does not run
// (sessions.Credentials).
type SessionCredentials interface {
	IsCredential(token string) bool
	Check(token string) (user, session string, err error)
}

// Bearer authenticates a bearer token.
func (a *Authenticator) Bearer(token string) (Principal, error) {
	p, _, err := a.BearerUntil(token)
	return p, err
}

// BearerUntil is Bearer that also returns when the token expires (zero:
// never), for a caller that remembers the answer until then or until the
// records change.
func (a *Authenticator) BearerUntil(token string) (Principal, time.Time, error) {
	if a.StaticToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(a.StaticToken)) == 1 {
		return Principal{User: "admin", Via: ViaStaticToken, Admin: true}, time.Time{}, nil
	}
	if a.Sessions != nil && a.Sessions.IsCredential(token) {
		user, id, err := a.Sessions.Check(token)
		if err != nil {
			return Principal{}, time.Time{}, fmt.Errorf("%w: %v", ErrUnauthenticated, err)
		}
		return Principal{User: user, Via: ViaSession, Credential: id, Session: id}, time.Time{}, nil
	}
	if _, err := ParseToken(token); err != nil {
		return Principal{}, time.Time{}, err
	}
	// The lookup is by the token's SHA-256: an attacker timing it learns
	// about hashes of its own guesses, not about stored tokens.
	var t *Token
	var u *User
	a.part(func(p *Part) {
		if t = p.TokenByHash(TokenHash(token)); t != nil {
			u = p.User(t.User)
		}
	})
	switch {
	case t == nil || u == nil:
		return Principal{}, time.Time{}, fmt.Errorf("%w: unknown or revoked token", ErrUnauthenticated)
	case t.Expired(a.now()):
		return Principal{}, time.Time{}, fmt.Errorf("%w: token %s of %s expired at %s", ErrUnauthenticated, t.Name, t.User, t.Expires.Format(time.RFC3339))
	}
	return Principal{User: u.Name, Via: ViaToken, Credential: t.Name, Admin: u.Admin, Grants: u.Grants}, t.Expires, nil
}

// Basic authenticates a user name and password, or an access key ID and
// its secret. The password check (argon2id) runs outside the state's lock.
func (a *Authenticator) Basic(user, secret string) (Principal, error) {
	if id, err := ParseKeyID(user); err == nil {
		return a.accessKey(id, secret)
	}
	var u *User
	a.part(func(p *Part) { u = p.User(user) })
	if u == nil || u.PasswordHash == "" {
		// Spend the time a real check would, so that timing does not
		// tell which user names exist.
		CheckPassword(a.dummyHash(), secret)
		return Principal{}, fmt.Errorf("%w: wrong user or password", ErrUnauthenticated)
	}
	if !CheckPassword(u.PasswordHash, secret) {
		return Principal{}, fmt.Errorf("%w: wrong user or password", ErrUnauthenticated)
	}
	return Principal{User: u.Name, Via: ViaPassword, Admin: u.Admin, Grants: u.Grants}, nil
}

func (a *Authenticator) dummyHash() string {
	a.dummyOnce.Do(func() { a.dummy, _ = HashPassword("mure: no such user", a.Params) })
	return a.dummy
}

func (a *Authenticator) accessKey(id, secret string) (Principal, error) {
	p, want, err := a.KeySecret(id)
	if errors.Is(err, ErrUnauthenticated) {
		// Not "unknown access key": the answer does not say which part
		// was wrong.
		return Principal{}, fmt.Errorf("%w: wrong access key or secret", ErrUnauthenticated)
	}
	if err != nil {
		return Principal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(secret), []byte(want)) != 1 {
		return Principal{}, fmt.Errorf("%w: wrong access key or secret", ErrUnauthenticated)
	}
	return p, nil
}

// KeySecret opens an access key for a signature check (S3's SigV4 signs
// with the secret, so the secret itself must be recovered): the principal
// the key acts for and the key's secret. An unknown key, or one whose
// user is gone, is ErrUnauthenticated.
func (a *Authenticator) KeySecret(id string) (Principal, string, error) {
	if _, err := ParseKeyID(id); err != nil {
		return Principal{}, "", fmt.Errorf("%w: %v", ErrUnauthenticated, err)
	}
	var k *AccessKey
	var u *User
	a.part(func(p *Part) {
		if k = p.Key(id); k != nil {
			u = p.User(k.User)
		}
	})
	if k == nil || u == nil || a.Sealer == nil {
		return Principal{}, "", fmt.Errorf("%w: unknown access key %s", ErrUnauthenticated, id)
	}
	secret, err := a.Sealer.Open(k.ID, k.Sealed)
	if err != nil {
		return Principal{}, "", fmt.Errorf("access key %s: %w", k.ID, err)
	}
	return Principal{User: u.Name, Via: ViaAccessKey, Credential: k.ID, Admin: u.Admin, Grants: u.Grants}, secret, nil
}
