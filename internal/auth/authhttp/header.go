package authhttp

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/mure-dev/mure/internal/auth"
)

// Scheme is how a request presents its credential.
type Scheme int

// Schemes of the Authorization header.
const (
	None Scheme = iota
	Bearer
	Basic
)

// Credential is a parsed Authorization header.
type Credential struct {
	Scheme Scheme
	// Token is a bearer token.
	Token string
	// User and Secret are Basic's user name (or access key ID) and
	// password (or secret).
	User, Secret string
}

// maxHeader bounds the Authorization header read.
const maxHeader = 4096

// ParseAuthorization reads an Authorization header: "" (no credential),
// "Bearer TOKEN" or "Basic base64(user:secret)". Scheme names are
// case-insensitive (RFC 9110).
func ParseAuthorization(h string) (Credential, error) {
	if h == "" {
		return Credential{}, nil
	}
	if len(h) > maxHeader {
		return Credential{}, fmt.Errorf("%w: Authorization header over %d bytes", auth.ErrMalformed, maxHeader)
	}
	scheme, rest, _ := strings.Cut(h, " ")
	rest = strings.TrimLeft(rest, " ")
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		if rest == "" || strings.ContainsAny(rest, " \t") {
			return Credential{}, fmt.Errorf("%w: 'Authorization: Bearer TOKEN' needs one token", auth.ErrMalformed)
		}
		return Credential{Scheme: Bearer, Token: rest}, nil
	case strings.EqualFold(scheme, "Basic"):
		b, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return Credential{}, fmt.Errorf("%w: Basic credentials are base64 of USER:PASSWORD", auth.ErrMalformed)
		}
		user, secret, ok := strings.Cut(string(b), ":")
		if !ok || user == "" {
			return Credential{}, fmt.Errorf("%w: Basic credentials are base64 of USER:PASSWORD", auth.ErrMalformed)
		}
		return Credential{Scheme: Basic, User: user, Secret: secret}, nil
	}
	return Credential{}, fmt.Errorf("%w: use 'Authorization: Bearer TOKEN' or 'Basic ...'", auth.ErrMalformed)
}
