package systest

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/certs"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TLS on the client ports: a node with a certificate from the cluster CA
// answers HTTPS to a client that trusts the CA (the Go client with
// WithCA), refuses plain HTTP, accepts a password over TLS, and after
// ReloadTLS (SIGHUP) serves the new certificate to new connections.
func TestClientTLS(t *testing.T) {
	dir := t.TempDir()
	if err := certs.InitCA(dir, "test CA"); err != nil {
		t.Fatal(err)
	}
	crt, key := filepath.Join(dir, "n.crt"), filepath.Join(dir, "n.key")
	if err := certs.Issue(dir, []string{"127.0.0.1", "localhost"}, 1, crt, key); err != nil {
		t.Fatal(err)
	}
	if err := certs.InitCA(dir, "again"); !errors.Is(err, certs.ErrExists) {
		t.Fatalf("a second CA over the first: %v", err)
	}
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) { cfg.TLSCert, cfg.TLSKey = crt, key }})
	pool, err := certs.LoadPool(filepath.Join(dir, certs.CACert))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	https := "https://" + c.HTTPAddr(0)
	cl := client.New([]string{https}, client.WithToken(c.Token()), client.WithCA(pool))
	if _, err := cl.Put(ctx, "tls/a", strings.NewReader("over TLS"), nil); err != nil {
		t.Fatalf("put over TLS: %v", err)
	}
	if _, err := client.New([]string{https}, client.WithToken(c.Token())).WhoAmI(ctx); err == nil {
		t.Fatal("a client that does not trust the cluster CA was answered")
	}
	if _, err := client.New([]string{"http://" + c.HTTPAddr(0)}, client.WithToken(c.Token()), client.WithAttempts(1)).WhoAmI(ctx); err == nil {
		t.Fatal("plain HTTP was answered on the TLS port")
	}
	if _, err := cl.AddUser(ctx, client.UserChange{Name: "alice", Password: ptr("alice-pass-1"), Grants: &[]string{"rw:tls/"}}); err != nil {
		t.Fatal(err)
	}
	p, err := client.New([]string{https}, client.WithBasicAuth("alice", "alice-pass-1"), client.WithCA(pool)).WhoAmI(ctx)
	if err != nil || p.User != "alice" || p.Via != "password" {
		t.Fatalf("password over TLS: %+v %v", p, err)
	}

	serial := func() string {
		conn, err := tls.Dial("tcp", c.HTTPAddr(0), &tls.Config{RootCAs: pool})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	if err := certs.Issue(dir, []string{"127.0.0.1"}, 2, crt, key); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[0].ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	if after := serial(); after == before {
		t.Fatal("the reloaded certificate is not served to a new connection")
	}
	if err := os.WriteFile(key, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[0].ReloadTLS(); err == nil {
		t.Fatal("a damaged key was reloaded")
	}
	if _, err := cl.WhoAmI(ctx); err != nil {
		t.Fatalf("after a failed reload the previous certificate should stay: %v", err)
	}
	resp, err := http.Get("http://" + c.HTTPAddr(0) + "/healthz")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP health check answered on the TLS port")
		}
	}
}

func ptr[T any](v T) *T { return &v }
