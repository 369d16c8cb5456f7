package authhttp_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/auth/authhttp"
	"github.com/mure-dev/mure/internal/meta"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestParseAuthorization(t *testing.T) {
	tests := []struct {
		h    string
		want authhttp.Credential
		err  bool
	}{
		{"", authhttp.Credential{}, false},
		{"Bearer abc", authhttp.Credential{Scheme: authhttp.Bearer, Token: "abc"}, false},
		{"bearer  abc", authhttp.Credential{Scheme: authhttp.Bearer, Token: "abc"}, false},
		{"Basic " + b64("alice:pw:with:colons"), authhttp.Credential{Scheme: authhttp.Basic, User: "alice", Secret: "pw:with:colons"}, false},
		{"Basic " + b64("alice:"), authhttp.Credential{Scheme: authhttp.Basic, User: "alice"}, false},
		{"Bearer", authhttp.Credential{}, true},
		{"Bearer a b", authhttp.Credential{}, true},
		{"Basic " + b64("nocolon"), authhttp.Credential{}, true},
		{"Basic " + b64(":pw"), authhttp.Credential{}, true},
		{"Basic !!!", authhttp.Credential{}, true},
		{"Digest x", authhttp.Credential{}, true},
		{"Bearer " + strings.Repeat("a", 5000), authhttp.Credential{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.h, func(t *testing.T) {
			got, err := authhttp.ParseAuthorization(tc.h)
			if (err != nil) != tc.err || err != nil && !errors.Is(err, auth.ErrMalformed) || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func FuzzParseAuthorization(f *testing.F) {
	f.Add("Bearer " + auth.NewToken())
	f.Add("Basic " + b64("a:b"))
	f.Add("basic")
	f.Fuzz(func(t *testing.T, h string) {
		c, err := authhttp.ParseAuthorization(h)
		if err != nil {
			return
		}
		switch c.Scheme {
		case authhttp.None:
			if h != "" {
				t.Fatalf("%q read as no credential", h)
			}
		case authhttp.Bearer:
			if c.Token == "" || strings.ContainsAny(c.Token, " \t") {
				t.Fatalf("%q gave token %q", h, c.Token)
			}
		case authhttp.Basic:
			if c.User == "" || strings.Contains(c.User, ":") {
				t.Fatalf("%q gave user %q", h, c.User)
			}
		}
	})
}

// A password over plain HTTP from another machine is refused, saying to
// use TLS; from loopback or over TLS it is checked.
func TestBasicNeedsTLSOffLoopback(t *testing.T) {
	fsm := meta.NewFSM(auth.NewPart())
	g := &authhttp.Guard{Auth: &auth.Authenticator{Records: fsm, Params: auth.TestHashParams()},
		Classify: func(*http.Request) authhttp.Need { return authhttp.Need{Action: auth.Known} }}
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	tests := []struct {
		remote string
		tls    bool
		want   int
		code   string
	}{
		{"10.1.2.3:5000", false, http.StatusUnauthorized, `"tls_required"`},
		{"[2001:db8::1]:5000", false, http.StatusUnauthorized, `"tls_required"`},
		{"127.0.0.1:5000", false, http.StatusUnauthorized, `"unauthorized"`},
		{"[::1]:5000", false, http.StatusUnauthorized, `"unauthorized"`},
		{"10.1.2.3:5000", true, http.StatusUnauthorized, `"unauthorized"`},
	}
	for _, tc := range tests {
		t.Run(tc.remote, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/status", nil)
			r.RemoteAddr = tc.remote
			if tc.tls {
				r = httptest.NewRequest("GET", "https://node/status", nil)
				r.RemoteAddr = tc.remote
			}
			r.Header.Set("Authorization", "Basic "+b64("alice:some-password"))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want || !strings.Contains(w.Body.String(), tc.code) {
				t.Fatalf("%d %s, want %d %s", w.Code, w.Body, tc.want, tc.code)
			}
			if tc.code == `"tls_required"` && !strings.Contains(w.Body.String(), "TLS") {
				t.Fatalf("the refusal does not say to use TLS: %s", w.Body)
			}
		})
	}
}

// Behind the guard the credential is gone and X-Mure-User names the
// caller; a client's own X-Mure-User does not pass.
func TestGuardSpendsTheCredential(t *testing.T) {
	fsm := meta.NewFSM(auth.NewPart())
	g := &authhttp.Guard{Auth: &auth.Authenticator{Records: fsm, StaticToken: "static"},
		Classify: func(*http.Request) authhttp.Need { return authhttp.Need{Action: auth.Known} }}
	var seen http.Header
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r.Header.Clone() }))
	r := httptest.NewRequest("GET", "/cgi/x", nil)
	r.Header.Set("Authorization", "Bearer static")
	r.Header.Set("X-Mure-User", "someone-else")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if seen == nil || seen.Get("Authorization") != "" || seen.Get("X-Mure-User") != "admin" {
		t.Fatalf("behind the guard: %v", seen)
	}
}

// A node whose copy of the credentials may be behind (Current false)
// answers a credential it cannot match with 503 and Retry-After, not 401:
// the cluster may have made it after the node's copy. One it can match
// still passes, and a current node still says 401.
func TestGuardNotCurrentAsksForRetry(t *testing.T) {
	tests := []struct {
		name    string
		current bool
		authz   string
		want    int
	}{
		{"unknown password, current", true, "Basic " + b64("alice:some-password"), http.StatusUnauthorized},
		{"unknown password, behind", false, "Basic " + b64("alice:some-password"), http.StatusServiceUnavailable},
		{"known token, behind", false, "Bearer static", http.StatusTeapot},
		{"no credential, behind", false, "", http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsm := meta.NewFSM(auth.NewPart())
			g := &authhttp.Guard{Auth: &auth.Authenticator{Records: fsm, StaticToken: "static", Params: auth.TestHashParams()},
				Classify: func(*http.Request) authhttp.Need { return authhttp.Need{Action: auth.Known} },
				Current:  func() bool { return tc.current }}
			h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
			r := httptest.NewRequest("GET", "/status", nil)
			r.RemoteAddr = "127.0.0.1:5000"
			if tc.authz != "" {
				r.Header.Set("Authorization", tc.authz)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("%d %s, want %d", w.Code, w.Body, tc.want)
			}
			if tc.want == http.StatusServiceUnavailable && (w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "retry")) {
				t.Fatalf("a 503 without Retry-After or a word to retry: %v %s", w.Header(), w.Body)
			}
		})
	}
}

// A 503 from a node that may be behind is still a failed login: it counts
// toward the limits per address and per user, so a guesser who finds a
// lagging node gets no more tries than at a current one.
func TestGuardNotCurrentStillLimits(t *testing.T) {
	g := &authhttp.Guard{Auth: &auth.Authenticator{Records: meta.NewFSM(auth.NewPart()), Params: auth.TestHashParams()},
		Classify: func(*http.Request) authhttp.Need { return authhttp.Need{Action: auth.Known} },
		Limiter:  &auth.FailureLimiter{Burst: 2, Period: 1 << 40},
		Current:  func() bool { return false }}
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for i, want := range []int{http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		r := httptest.NewRequest("GET", "/status", nil)
		r.RemoteAddr = "127.0.0.1:5000"
		r.Header.Set("Authorization", "Basic "+b64("alice:guess"))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Fatalf("attempt %d: %d %s, want %d", i+1, w.Code, w.Body, want)
		}
	}
}
