package auth_test

import (
	"testing"

	"github.com/mure-dev/mure/internal/auth"
)

// BenchmarkBearer: checking a bearer token (SHA-256, a lookup under the
// state machine's read lock), the cost every authenticated request pays.
func BenchmarkBearer(b *testing.B) {
	w := newWorld(b)
	s := people(b, w)
	a := &auth.Authenticator{Records: w.fsm}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Bearer(s.aliceToken); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckPasswordDefault: one password check with the production
// parameters (argon2id t=3, 64 MiB, p=4), what HTTP Basic costs per request.
func BenchmarkCheckPasswordDefault(b *testing.B) {
	h, err := auth.HashPassword("correct horse", auth.DefaultHashParams())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if !auth.CheckPassword(h, "correct horse") {
			b.Fatal("mismatch")
		}
	}
}
