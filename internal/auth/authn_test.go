package auth_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/auth"
)

func TestAuthenticate(t *testing.T) {
	w := newWorld(t)
	s := people(t, w)
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	expiring, revoked := auth.NewToken(), auth.NewToken()
	w.must(auth.AddTokenOp(auth.Token{Name: "ci", User: "root", Hash: auth.TokenHash(expiring), Expires: now}))
	w.must(auth.AddTokenOp(auth.Token{Name: "old", User: "root", Hash: auth.TokenHash(revoked)}))
	w.must(auth.RevokeTokenOp("root", "old"))
	a := &auth.Authenticator{Records: w.fsm, Sealer: sealer(t), StaticToken: "legacy-static", Params: auth.TestHashParams(),
		Now: func() time.Time { return now }}
	otherKey, _ := auth.NewSealer(make([]byte, 32))

	tests := []struct {
		name      string
		try       func() (auth.Principal, error)
		want      error
		user, via string
		admin     bool
	}{
		{"token", func() (auth.Principal, error) { return a.Bearer(s.aliceToken) }, nil, "alice", auth.ViaToken, false},
		{"static token", func() (auth.Principal, error) { return a.Bearer("legacy-static") }, nil, "admin", auth.ViaStaticToken, true},
		{"unknown token", func() (auth.Principal, error) { return a.Bearer(auth.NewToken()) }, auth.ErrUnauthenticated, "", "", false},
		{"malformed token", func() (auth.Principal, error) { return a.Bearer("mure_short") }, auth.ErrMalformed, "", "", false},
		{"expired token", func() (auth.Principal, error) { return a.Bearer(expiring) }, auth.ErrUnauthenticated, "", "", false},
		{"revoked token", func() (auth.Principal, error) { return a.Bearer(revoked) }, auth.ErrUnauthenticated, "", "", false},
		{"password", func() (auth.Principal, error) { return a.Basic("root", s.rootPW) }, nil, "root", auth.ViaPassword, true},
		{"wrong password", func() (auth.Principal, error) { return a.Basic("root", s.alicePW) }, auth.ErrUnauthenticated, "", "", false},
		{"unknown user", func() (auth.Principal, error) { return a.Basic("carol", s.rootPW) }, auth.ErrUnauthenticated, "", "", false},
		{"user without password", func() (auth.Principal, error) { return a.Basic("bob", "") }, auth.ErrUnauthenticated, "", "", false},
		{"access key", func() (auth.Principal, error) { return a.Basic(s.keyID, s.keySecret) }, nil, "alice", auth.ViaAccessKey, false},
		{"wrong key secret", func() (auth.Principal, error) { return a.Basic(s.keyID, s.keySecret+"x") }, auth.ErrUnauthenticated, "", "", false},
		{"key under another cluster key", func() (auth.Principal, error) {
			b := &auth.Authenticator{Records: w.fsm, Sealer: otherKey, Params: auth.TestHashParams()}
			return b.Basic(s.keyID, s.keySecret)
		}, auth.ErrSeal, "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.try()
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if p.User != tc.user || p.Via != tc.via || p.Admin != tc.admin {
				t.Fatalf("principal %+v, want %s via %s admin=%v", p, tc.user, tc.via, tc.admin)
			}
		})
	}
}

func TestAllowed(t *testing.T) {
	admin := auth.Principal{User: "root", Admin: true}
	alice := auth.Principal{User: "alice", Grants: []auth.Grant{{Prefix: "docs/", Write: true}, {Prefix: "pub/"}}}
	anon := auth.Anonymous([]auth.Grant{{Prefix: "pub/"}})
	sess := auth.Principal{User: "alice", Via: auth.ViaSession, Admin: true, Grants: alice.Grants, Session: "s1"}
	tests := []struct {
		p    auth.Principal
		a    auth.Action
		path string
		want bool
	}{
		{admin, auth.Admin, "", true},
		{admin, auth.Write, "anything", true},
		{alice, auth.Write, "docs/a", true},
		{alice, auth.Read, "docs/a", true},
		{alice, auth.Read, "pub/x", true},
		{alice, auth.Write, "pub/x", false},
		{alice, auth.Read, "docsx", false},
		{alice, auth.Admin, "", false},
		{anon, auth.Read, "pub/x", true},
		{anon, auth.Write, "pub/x", false},
		{anon, auth.Read, "docs/a", false},
		{auth.Principal{User: "bob", Via: auth.ViaToken}, auth.Read, "", false},
		{auth.Principal{User: "bob", Via: auth.ViaToken}, auth.Known, "", true},
		{anon, auth.Known, "", false},
		{anon, auth.Run, "", false},
		{auth.Principal{User: "bob", Via: auth.ViaToken}, auth.Run, "", true},
		// A session's credential runs that session's children, nothing
		// else, even for an admin's session.
		{sess, auth.Run, "", true},
		{sess, auth.Known, "", false},
		{sess, auth.Read, "docs/a", false},
		{sess, auth.Write, "docs/a", false},
		{sess, auth.Admin, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.p.Name()+" "+tc.a.String()+" "+tc.path, func(t *testing.T) {
			if got := tc.p.Allowed(tc.a, tc.path); got != tc.want {
				t.Fatalf("Allowed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFailureLimiter(t *testing.T) {
	now := time.Unix(0, 0)
	l := &auth.FailureLimiter{Burst: 3, Period: 10 * time.Second, Now: func() time.Time { return now }}
	for i := range 3 {
		if w := l.Wait("addr:a", "user:x"); w != 0 {
			t.Fatalf("try %d: wait %v before the burst is spent", i, w)
		}
		l.Fail("addr:a", "user:x")
	}
	if w := l.Wait("addr:a"); w != 10*time.Second {
		t.Fatalf("after 3 failures the address waits %v, want 10s", w)
	}
	if w := l.Wait("addr:b", "user:x"); w == 0 {
		t.Fatal("another address trying the same user is not slowed")
	}
	if w := l.Wait("addr:b", "user:y"); w != 0 {
		t.Fatalf("an unrelated address and user wait %v", w)
	}
	now = now.Add(10 * time.Second)
	if w := l.Wait("addr:a"); w != 0 {
		t.Fatalf("one period later the address still waits %v", w)
	}
}

func TestPasswordHash(t *testing.T) {
	h := hash(t, "correct horse")
	if !auth.CheckPassword(h, "correct horse") || auth.CheckPassword(h, "correct horsE") {
		t.Fatal("CheckPassword does not tell the password from another")
	}
	h2 := hash(t, "correct horse")
	if h == h2 {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	d, err := auth.HashPassword("x", auth.HashParams{})
	if err != nil || len(d) < 20 || !auth.CheckPassword(d, "x") {
		t.Fatalf("default parameters: %q %v", d, err)
	}
	if want := "$argon2id$v=19$m=65536,t=3,p=4$"; d[:len(want)] != want {
		t.Fatalf("default hash %q does not use RFC 9106's parameters", d)
	}
}

func TestSeal(t *testing.T) {
	s := sealer(t)
	sealed := s.Seal("MKAAAA", "the secret")
	if got, err := s.Open("MKAAAA", sealed); err != nil || got != "the secret" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := s.Open("MKBBBB", sealed); !errors.Is(err, auth.ErrSeal) {
		t.Fatalf("opened under another record's label: %v", err)
	}
	if sealed == s.Seal("MKAAAA", "the secret") {
		t.Fatal("sealing twice gives the same bytes: the nonce is not random")
	}
	if _, err := auth.NewSealer([]byte("short")); err == nil {
		t.Fatal("a 5-byte cluster key was accepted")
	}
}
