package webdav_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

const alicePassword = "correct horse battery"

// davCluster starts n nodes serving WebDAV (and S3), one copy per file (so
// that some node holds neither a copy nor the right of a file and must
// forward), and makes the user alice (rw:photos/, ro:shared/) with a
// password and an access key.
func davCluster(t testing.TB, n int) (*testcluster.Cluster, client.AccessKey) {
	t.Helper()
	c := testcluster.Start(t, n, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.WebDAVAddr = testcluster.FreeAddr(t)
		cfg.S3Addr = testcluster.FreeAddr(t)
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := c.Client(0)
	if n > 1 {
		if _, err := admin.SetConfig(ctx, meta.CfgReplication, "1"); err != nil {
			t.Fatal(err)
		}
	}
	pw := alicePassword
	grants := []string{"rw:photos/", "ro:shared/"}
	// A retry after a leader change may find the first attempt applied.
	if _, err := admin.AddUser(ctx, client.UserChange{Name: "alice", Password: &pw, Grants: &grants}); err != nil && !strings.Contains(err.Error(), "exists already") {
		t.Fatal(err)
	}
	key, err := admin.CreateAccessKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// dav is a WebDAV client of one node with one credential.
type dav struct {
	t          testing.TB
	base       string
	user, pass string
	bearer     string
}

func davOf(t testing.TB, c *testcluster.Cluster, i int, user, pass string) *dav {
	return &dav{t: t, base: "http://" + c.Nodes[i].WebDAVAddr(), user: user, pass: pass}
}

// do sends one request and returns the status, the body and the headers.
// A 503 (a leader change in the test cluster) is retried after its
// Retry-After, as a client would, a few times.
func (d *dav) do(method, path string, body string, hdr ...string) (int, string, http.Header) {
	d.t.Helper()
	for try := 0; ; try++ {
		st, b, h := d.once(method, path, body, hdr...)
		if st != http.StatusServiceUnavailable || try == 9 {
			return st, b, h
		}
		d.t.Logf("%s %s: %d %s; retrying", method, path, st, b)
		time.Sleep(time.Second)
	}
}

func (d *dav) once(method, path string, body string, hdr ...string) (int, string, http.Header) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.base+path, rd)
	if err != nil {
		d.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	switch {
	case d.bearer != "":
		req.Header.Set("Authorization", "Bearer "+d.bearer)
	case d.user != "":
		req.SetBasicAuth(d.user, d.pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		d.t.Fatalf("%s %s: body: %v", method, path, err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// want sends one request and fails the test unless it answers status.
func (d *dav) want(status int, method, path, body string, hdr ...string) string {
	d.t.Helper()
	got, b, _ := d.do(method, path, body, hdr...)
	if got != status {
		d.t.Fatalf("%s %s: %d, want %d: %s", method, path, got, status, b)
	}
	return b
}
