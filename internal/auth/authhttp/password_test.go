package authhttp_test

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/auth/authhttp"
	"github.com/mure-dev/mure/internal/meta"
)

// noUsers is a state with an empty auth namespace.
type noUsers struct{}

func (noUsers) ReadPart(_ string, fn func(meta.Part)) bool { fn(auth.NewPart()); return true }

// Guard.Password, the dashboard's login, keeps the client API's rules: no
// password in clear from another machine, and failures limited per
// address and user.
func TestGuardPassword(t *testing.T) {
	g := &authhttp.Guard{Auth: &auth.Authenticator{Records: noUsers{}, Params: auth.TestHashParams()},
		Limiter: &auth.FailureLimiter{Burst: 2, Period: 1 << 40}}

	remote := httptest.NewRequest("POST", "/ui/login", nil)
	remote.RemoteAddr = "192.0.2.7:4242"
	if _, err := g.Password(remote, "alice", "pw"); !errors.Is(err, authhttp.ErrTLSRequired) {
		t.Fatalf("from another machine without TLS: %v, want ErrTLSRequired", err)
	}

	local := httptest.NewRequest("POST", "/ui/login", nil)
	local.RemoteAddr = "127.0.0.1:4242"
	for i := range 2 {
		if _, err := g.Password(local, "alice", "pw"); !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatalf("attempt %d: %v, want ErrUnauthenticated", i+1, err)
		}
	}
	var many *authhttp.TooManyError
	if _, err := g.Password(local, "alice", "pw"); !errors.As(err, &many) || many.Wait <= 0 {
		t.Fatalf("after the burst: %v, want a TooManyError with a wait", err)
	}
}
