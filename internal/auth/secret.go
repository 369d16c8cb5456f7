package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// TokenPrefix starts every bearer token mure issues, so that a leaked one
// is recognisable (secret scanners, logs).
const TokenPrefix = "mure_"

// tokenBytes is a token's entropy: 256 bits.
const tokenBytes = 32

var b64 = base64.RawURLEncoding

// NewToken returns a fresh random bearer token.
func NewToken() string { return TokenPrefix + b64.EncodeToString(randomBytes(tokenBytes)) }

// ParseToken checks a bearer token's form: the prefix and 43 characters
// of base64url (256 bits).
func ParseToken(s string) (string, error) {
	body, ok := strings.CutPrefix(s, TokenPrefix)
	if !ok {
		return "", fmt.Errorf("%w: a token starts with %q", ErrMalformed, TokenPrefix)
	}
	if b, err := b64.DecodeString(body); err != nil || len(b) != tokenBytes || len(body) != 43 {
		return "", fmt.Errorf("%w: a token is %q and 43 base64url characters", ErrMalformed, TokenPrefix)
	}
	return s, nil
}

// TokenHash is the stored form of a token: hex SHA-256. A token carries
// 256 random bits, so a fast hash is enough (nobody can guess a preimage;
// a slow hash only protects low-entropy secrets such as passwords), and it
// lets a node find the token by its hash in one lookup.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Access keys: an ID that names the key (not secret, shown in listings)
// and a secret shown once at creation.
const (
	KeyIDPrefix  = "MK"
	keyIDBytes   = 10 // 16 base32 characters
	keySecretLen = 30 // 40 base64url characters: 240 bits
)

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewAccessKey returns a fresh access key ID and secret.
func NewAccessKey() (id, secret string) {
	return KeyIDPrefix + b32.EncodeToString(randomBytes(keyIDBytes)), b64.EncodeToString(randomBytes(keySecretLen))
}

// ParseKeyID checks an access key ID's form.
func ParseKeyID(s string) (string, error) {
	body, ok := strings.CutPrefix(s, KeyIDPrefix)
	if b, err := b32.DecodeString(body); !ok || err != nil || len(b) != keyIDBytes || len(body) != 16 {
		return "", fmt.Errorf("%w: an access key ID is %q and 16 base32 characters", ErrMalformed, KeyIDPrefix)
	}
	return s, nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("auth: no randomness: " + err.Error()) // crypto/rand does not fail on supported systems
	}
	return b
}
