package sessions

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/mure-dev/mure/internal/meta"
)

// A session's credential lets the programs of a session start its
// application sessions (`mure run`, paper 004's APS from a DTS) without
// the user's password: the node makes one for each session it starts,
// gives it to the program in its environment (CredentialEnv) by way of
// the holder's, never on disk, and keeps only its SHA-256 in the
// session's record. It is good while the record lives, and only for the
// session's children (docs/security.md, decision 0045).

// CredentialEnv is the environment variable that carries a session's
// credential to its program; the mure CLI uses it when it has no other.
const CredentialEnv = "MURE_SESSION_TOKEN"

// CredentialPrefix starts every session credential:
// mures_SESSIONID_ and 43 base64url characters (256 random bits).
const CredentialPrefix = "mures_"

var b64 = base64.RawURLEncoding

// Credential errors.
var (
	// ErrBadCredential: not a session's credential, or its session ended.
	ErrBadCredential = errors.New("unknown session credential, or its session ended")
)

// NewCredential returns a fresh credential for session id and the hash
// its record keeps.
func NewCredential(id string) (token, hash string) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	token = CredentialPrefix + id + "_" + b64.EncodeToString(b[:])
	return token, credentialHash(token)
}

func credentialHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// IsCredential reports whether token has a session credential's form.
func (Credentials) IsCredential(token string) bool {
	_, ok := parseCredential(token)
	return ok
}

func parseCredential(token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, CredentialPrefix)
	if !ok {
		return "", false
	}
	id, secret, ok := strings.Cut(rest, "_")
	if !ok || id == "" || len(secret) != 43 {
		return "", false
	}
	if b, err := b64.DecodeString(secret); err != nil || len(b) != 32 {
		return "", false
	}
	return id, true
}

// Credentials checks session credentials against the records of a state
// machine (auth.Authenticator's SessionCredentials).
type Credentials struct {
	FSM *meta.FSM
}

// Check returns the user and session whose credential token is, while
// the session runs (or starts, or is lost: its holder may live on).
func (c Credentials) Check(token string) (user, session string, err error) {
	id, ok := parseCredential(token)
	if !ok {
		return "", "", fmt.Errorf("%w: a session credential is %s, the session ID, _ and 43 base64url characters", ErrBadCredential, CredentialPrefix)
	}
	s, found := Lookup(c.FSM, id)
	if !found || s.CredentialHash == "" ||
		subtle.ConstantTimeCompare([]byte(s.CredentialHash), []byte(credentialHash(token))) != 1 {
		return "", "", ErrBadCredential
	}
	return s.User, s.ID, nil
}
