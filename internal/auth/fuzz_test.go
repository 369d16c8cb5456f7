package auth_test

import (
	"strings"
	"testing"

	"github.com/mure-dev/mure/internal/auth"
)

// The credential parsers never panic, and what they accept has the form
// they promise.
func FuzzParseToken(f *testing.F) {
	f.Add(auth.NewToken())
	f.Add("mure_")
	f.Add("Bearer x")
	f.Fuzz(func(t *testing.T, s string) {
		if tok, err := auth.ParseToken(s); err == nil && (tok != s || !strings.HasPrefix(s, auth.TokenPrefix) || len(s) != 48) {
			t.Fatalf("accepted %q", s)
		}
	})
}

func FuzzParseKeyID(f *testing.F) {
	id, _ := auth.NewAccessKey()
	f.Add(id)
	f.Add("MK")
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := auth.ParseKeyID(s); err == nil && (len(s) != 18 || !strings.HasPrefix(s, auth.KeyIDPrefix)) {
			t.Fatalf("accepted %q", s)
		}
	})
}

func FuzzCheckPassword(f *testing.F) {
	h, _ := auth.HashPassword("pw", auth.TestHashParams())
	f.Add(h, "pw")
	f.Add("$argon2id$v=19$m=4294967295,t=1,p=1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA", "x")
	f.Fuzz(func(t *testing.T, encoded, pw string) {
		auth.CheckPassword(encoded, pw) // must not panic nor allocate without bound
	})
}

func FuzzParseGrant(f *testing.F) {
	f.Add("rw:docs/")
	f.Add("ro:")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := auth.ParseGrant(s)
		if err == nil && g.String() != s {
			t.Fatalf("%q read as %+v, written back as %q", s, g, g.String())
		}
	})
}
