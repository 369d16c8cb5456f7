package testcluster

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/node"
)

// Test clusters authenticate like every client: each cluster's clients
// carry the admin credential its first node wrote at its first start
// (DATA/admin.token). Raw HTTP requests of tests get it through
// Authorize, which finds the cluster by the address a request goes to.

var (
	tokensMu sync.Mutex
	tokens   = map[string]string{} // client address (host:port) → its cluster's admin token
)

// register makes requests to addr carry token (Authorize).
func register(token string, addrs ...string) {
	tokensMu.Lock()
	defer tokensMu.Unlock()
	for _, a := range addrs {
		if a != "" {
			tokens[a] = token
		}
	}
}

// TokenFor returns the admin token of the test cluster serving addr
// (host:port), "" when none does.
func TokenFor(addr string) string {
	tokensMu.Lock()
	defer tokensMu.Unlock()
	return tokens[addr]
}

// Authorize wraps rt (nil: http.DefaultTransport) so that a request with
// no Authorization header carries the admin token of the test cluster it
// goes to (each hop of a redirect is looked up again). Tests of
// authentication itself send their own header, or use a client without
// Authorize.
func Authorize(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return authorized{rt}
}

type authorized struct{ base http.RoundTripper }

func (a authorized) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") == "" {
		if tok := TokenFor(r.URL.Host); tok != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	return a.base.RoundTrip(r)
}

// readAdminToken waits for dir's admin credential (written while the node
// opens) and returns it.
func readAdminToken(t testing.TB, dir string) string {
	t.Helper()
	var tok string
	WaitFor(t, 30*time.Second, "the admin credential in "+dir, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, node.AdminTokenFile))
		tok = strings.TrimSpace(string(b))
		return err == nil && tok != ""
	})
	return tok
}
