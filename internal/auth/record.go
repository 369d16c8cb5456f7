package auth

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// User is a principal that logs in with a password, tokens or access
// keys. Only the password's argon2id hash is kept.
type User struct {
	Name         string    `json:"name"`
	PasswordHash string    `json:"password_hash,omitempty"`
	Admin        bool      `json:"admin,omitempty"`
	Grants       []Grant   `json:"grants,omitempty"`
	Created      time.Time `json:"created"`
}

// Grant gives access to the files under a path prefix ("" is every file;
// a bucket is a prefix "bucket/"). Write includes read.
type Grant struct {
	Prefix string `json:"prefix"`
	Write  bool   `json:"write,omitempty"`
}

// String is the grant's form on the command line: "rw:PREFIX" or
// "ro:PREFIX".
func (g Grant) String() string {
	if g.Write {
		return "rw:" + g.Prefix
	}
	return "ro:" + g.Prefix
}

// ParseGrant reads Grant.String's form.
func ParseGrant(s string) (Grant, error) {
	mode, prefix, ok := strings.Cut(s, ":")
	if !ok || (mode != "rw" && mode != "ro") {
		return Grant{}, fmt.Errorf("%w: grant %q is not rw:PREFIX or ro:PREFIX", ErrInvalid, s)
	}
	if strings.HasPrefix(prefix, "/") {
		return Grant{}, fmt.Errorf("%w: grant %q: a prefix is a file key's start, without a leading /", ErrInvalid, s)
	}
	return Grant{Prefix: prefix, Write: mode == "rw"}, nil
}

// Token is a named bearer token of a user. Only its hash (TokenHash) is
// kept; the token itself is shown once, when made.
type Token struct {
	Name    string    `json:"name"`
	User    string    `json:"user"`
	Hash    string    `json:"hash"`
	Created time.Time `json:"created"`
	// Expires is when the token stops working (zero: never).
	Expires time.Time `json:"expires,omitzero"`
}

// Expired reports whether the token has expired at now.
func (t *Token) Expired(now time.Time) bool { return !t.Expires.IsZero() && !now.Before(t.Expires) }

// AccessKey is an S3-style key pair of a user: the ID is public, the
// secret is kept sealed (Sealer), because checking a signed request needs
// the secret itself.
type AccessKey struct {
	ID      string    `json:"id"`
	User    string    `json:"user"`
	Sealed  string    `json:"sealed"`
	Created time.Time `json:"created"`
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ValidName checks a user's or token's name: lower case letters, digits,
// '.', '_' and '-', starting with a letter or digit, at most 63.
func ValidName(kind, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%w: %s name %q: use lower case letters, digits, '.', '_' and '-' (at most 63)", ErrInvalid, kind, name)
	}
	return nil
}

func (u *User) validate() error {
	if err := ValidName("user", u.Name); err != nil {
		return err
	}
	if u.PasswordHash != "" {
		if _, _, _, err := parseHash(u.PasswordHash); err != nil {
			return fmt.Errorf("user %s: %w", u.Name, err)
		}
	}
	for _, g := range u.Grants {
		if _, err := ParseGrant(g.String()); err != nil {
			return err
		}
	}
	return nil
}

func (u *User) clone() *User {
	c := *u
	c.Grants = slices.Clone(u.Grants)
	return &c
}
