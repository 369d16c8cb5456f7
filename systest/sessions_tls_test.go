//go:build linux

package systest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/certs"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/sessions"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestSessionTLS: inside a session on a node that speaks TLS with a
// certificate from mure's CA, mure verifies the node: the session's
// environment holds the CA (MURE_CA) beside the node's https:// address
// (MURE_NODE), so `mure session ls` there is answered rather than failing
// on an unknown authority, and at the program's first instant.
func TestSessionTLS(t *testing.T) {
	needSessions(t)
	dir := t.TempDir()
	if err := certs.InitCA(dir, "test CA"); err != nil {
		t.Fatal(err)
	}
	crt, key := filepath.Join(dir, "n.crt"), filepath.Join(dir, "n.key")
	if err := certs.Issue(dir, []string{"127.0.0.1"}, 1, crt, key); err != nil {
		t.Fatal(err)
	}
	bin := runnableBinary(t)
	out := filepath.Join(os.TempDir(), randName("mure-tls-out-")) // where the session's account may write
	t.Cleanup(func() { os.Remove(out) })
	// The program uses its credential at its first instant: the record
	// that holds it is written before the program starts. It stays after
	// its answer: a session whose program ends at once is refused as
	// failed to start (the cleanup kills it).
	script := bin + ` session ls > ` + out + `.tmp 2>&1; echo "rc=$?" >> ` + out + `.tmp; mv ` + out + `.tmp ` + out + `; exec sleep 300`
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.TLSCert, cfg.TLSKey = crt, key
		cfg.Sessions.HolderCommand = []string{bin, "session-holder"}
		cfg.Sessions.Kinds = []sessions.Kind{{Name: "check", Type: sessions.TypeCommand, Command: []string{"/bin/sh", "-c", script}}}
	}})
	t.Cleanup(func() { killHoldersIn(c.Nodes[0].Dir) })
	pool, err := certs.LoadPool(filepath.Join(dir, certs.CACert))
	if err != nil {
		t.Fatal(err)
	}
	https := "https://" + c.HTTPAddr(0)
	alice := addSessionUser(t, client.New([]string{https}, client.WithToken(c.Token()), client.WithCA(pool)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.New([]string{https}, client.WithToken(alice.token), client.WithCA(pool)).StartSession(ctx, client.NewSession{Kind: "check"}); err != nil {
		t.Fatal(err)
	}
	var got string
	testcluster.WaitFor(t, 20*time.Second, "mure in the session to finish", func() bool {
		b, err := os.ReadFile(out)
		got = string(b)
		return err == nil
	})
	if !strings.HasSuffix(got, "rc=0\n") {
		t.Fatalf("mure session ls inside a session on a TLS node:\n%s", got)
	}
}
