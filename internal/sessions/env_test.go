package sessions

import (
	"slices"
	"strings"
	"testing"

	"github.com/mure-dev/mure/internal/sessions/holder"
)

// TestSessionEnv: a session's program gets what mure needs there to reach
// its node: MURE_NODE and, when the node speaks TLS with a CA of its own,
// MURE_CA (the CA's PEM) — without it, mure in a session could not verify
// an https:// node. Neither is set when the node gives none.
func TestSessionEnv(t *testing.T) {
	const ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	for _, tc := range []struct {
		name     string
		url, ca  string
		want     []string
		wantNone []string
	}{
		{"TLS with a CA", "https://10.0.0.1:7946", ca, []string{"MURE_NODE=https://10.0.0.1:7946", "MURE_CA=" + ca}, nil},
		{"plain HTTP", "http://10.0.0.1:7946", "", []string{"MURE_NODE=http://10.0.0.1:7946"}, []string{"MURE_CA="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Manager{cfg: Config{NodeURL: func() string { return tc.url }, NodeCA: func() string { return tc.ca }}}
			spec, err := m.spec(Session{ID: "0123456789abcdef", User: "alice"}, Kind{Name: "shell", Type: TypeShell},
				Account{Name: "mure-alice", Home: t.TempDir(), Shell: "/bin/sh"}, holder.Size{Cols: 80, Rows: 24}, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !slices.Contains(spec.Env, w) {
					t.Errorf("the environment lacks %q: %q", w, spec.Env)
				}
			}
			for _, n := range tc.wantNone {
				if slices.ContainsFunc(spec.Env, func(e string) bool { return strings.HasPrefix(e, n) }) {
					t.Errorf("the environment has %s: %q", n, spec.Env)
				}
			}
		})
	}
}
