package main

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// withStdin runs fn with os.Stdin reading s.
func withStdin(t *testing.T, s string, fn func()) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { w.WriteString(s); w.Close() }()
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close() }()
	fn()
}

// The CLI against a secured node: the admin credential found with --data,
// users, tokens by MURE_TOKEN and passwords by MURE_USER/MURE_PASSWORD,
// revocation, and the refusal without a credential.
func TestUserAndTokenCommands(t *testing.T) {
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.Auth = node.AuthConfig{HashParams: auth.TestHashParams()}
	}})
	nd := c.Nodes[0]
	if fi, err := os.Stat(nd.AdminTokenPath()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin credential file: %v %v", fi, err)
	}
	t.Setenv("MURE_NODE", c.HTTPAddr(0))
	for _, k := range []string{"MURE_TOKEN", "MURE_USER", "MURE_PASSWORD", "MURE_DATA"} {
		t.Setenv(k, "")
	}
	out, err := run(t, runWhoami, "--data", nd.Dir)
	if err != nil || !strings.HasPrefix(out, "admin (admin) via token node-") {
		t.Fatalf("whoami with --data: %q %v", out, err)
	}
	withStdin(t, "alice-pass-1\n", func() {
		out, err = run(t, runUser, "add", "alice", "--grant", "rw:docs/", "--grant", "ro:pub/", "--data", nd.Dir)
	})
	if err != nil || !strings.Contains(out, "rw:docs/,ro:pub/") {
		t.Fatalf("user add: %q %v", out, err)
	}
	tok, err := run(t, runToken, "create", "laptop", "--user", "alice", "--data", nd.Dir)
	tok = strings.TrimSpace(tok)
	if _, perr := auth.ParseToken(tok); err != nil || perr != nil {
		t.Fatalf("token create: %q %v", tok, err)
	}
	t.Setenv("MURE_TOKEN", tok)
	if out, err = run(t, runWhoami); err != nil || out != "alice (rw:docs/,ro:pub/) via token laptop\n" {
		t.Fatalf("whoami with MURE_TOKEN: %q %v", out, err)
	}
	if _, err = run(t, runUser, "list"); err == nil || !strings.Contains(err.Error(), "403 forbidden") {
		t.Fatalf("alice lists users: %v, want 403", err)
	}
	if out, err = run(t, runToken, "list"); err != nil || !strings.Contains(out, "laptop") {
		t.Fatalf("alice lists her tokens: %q %v", out, err)
	}
	t.Setenv("MURE_TOKEN", "")
	t.Setenv("MURE_USER", "alice")
	t.Setenv("MURE_PASSWORD", "alice-pass-1")
	if out, err = run(t, runWhoami); err != nil || !strings.Contains(out, "via password") {
		t.Fatalf("whoami with MURE_USER: %q %v", out, err)
	}
	if _, err = run(t, runToken, "revoke", "laptop"); err != nil {
		t.Fatalf("alice revokes her token: %v", err)
	}
	t.Setenv("MURE_USER", "")
	t.Setenv("MURE_TOKEN", tok)
	if _, err = run(t, runWhoami); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("revoked token: %v, want 401", err)
	}
	t.Setenv("MURE_TOKEN", "")
	if _, err = run(t, runWhoami); err == nil || !strings.Contains(err.Error(), "needs a credential") {
		t.Fatalf("no credential: %v, want a 401 saying a credential is needed", err)
	}
}

// mure ca init and issue make a CA and a node certificate; a node serving
// it answers mure whoami --ca over https.
func TestCACommands(t *testing.T) {
	dir := t.TempDir()
	if _, err := run(t, runCA, "init", "--dir", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, runCA, "issue", "n1", "--dir", dir); err == nil {
		t.Fatal("issue without --host was accepted")
	}
	out, err := run(t, runCA, "issue", "n1", "--dir", dir, "--host", "127.0.0.1,localhost")
	if err != nil || !strings.Contains(out, "--tls-cert") {
		t.Fatalf("issue: %q %v", out, err)
	}
	for _, f := range []string{"ca.key", "n1.key"} {
		if fi, err := os.Stat(dir + "/" + f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, fi, err)
		}
	}
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.TLSCert, cfg.TLSKey = dir+"/n1.crt", dir+"/n1.key"
	}})
	t.Setenv("MURE_TOKEN", c.Token())
	t.Setenv("MURE_NODE", "https://"+c.HTTPAddr(0))
	if out, err = run(t, runWhoami, "--ca", dir+"/ca.crt"); err != nil || !strings.HasPrefix(out, "admin (admin)") {
		t.Fatalf("whoami over https with --ca: %q %v", out, err)
	}
}

// --anonymous-read takes prefixes ("*" for every file) as read-only grants,
// and --auth=false opens the API.
func TestAuthFlags(t *testing.T) {
	tests := []struct {
		args   []string
		open   bool
		grants []string
		bad    bool
	}{
		{nil, false, nil, false},
		{[]string{"--auth=false"}, true, nil, false},
		{[]string{"--anonymous-read", "pub/, docs/public/"}, false, []string{"ro:pub/", "ro:docs/public/"}, false},
		{[]string{"--anonymous-read", "*"}, false, []string{"ro:"}, false},
		{[]string{"--anonymous-read", "/abs"}, false, nil, true},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			var cfg node.Config
			done := authFlags(fs, &cfg)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := done()
			if (err != nil) != tc.bad {
				t.Fatalf("err %v, want error %v", err, tc.bad)
			}
			var got []string
			for _, g := range cfg.Auth.AnonymousRead {
				got = append(got, g.String())
			}
			if !tc.bad && (cfg.Auth.Open != tc.open || strings.Join(got, ",") != strings.Join(tc.grants, ",")) {
				t.Fatalf("open %v grants %v, want %v %v", cfg.Auth.Open, got, tc.open, tc.grants)
			}
		})
	}
}
