package systest

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestForwardingOverHTTP: a node that holds neither a valid copy nor the
// write right redirects (307) by default, and with X-Mure-Forward: 1 does
// the work itself: reads (whole and ranged) streamed from a holder,
// writes and deletes handed to the holder of the write right, which keeps
// it. The forwarder's metrics count what it forwarded.
func TestForwardingOverHTTP(t *testing.T) {
	c := testcluster.Start(t, 3)
	ctx := ctxT(t)
	if _, err := c.Client(0).SetConfig(ctx, "resume.idle", "1h"); err != nil {
		t.Fatal(err)
	}
	put(t, c.Client(0), "f", "v1")
	holder := c.Nodes[0].ID()
	f := c.Nodes[0].Cluster().FSM().File("f")
	out := -1
	for i := range c.Nodes {
		if !f.IsValidOn(c.Nodes[i].ID()) && f.Holder != c.Nodes[i].ID() {
			out = i
		}
	}
	if f.Holder != holder || out < 0 {
		t.Fatalf("after the write: holder %s valid %v, want holder %s and a node with no copy", f.Holder, f.Valid, holder)
	}
	noFollow := &http.Client{Transport: testcluster.Authorize(nil), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, forward, rng, body string) (*http.Response, string) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequestWithContext(ctx, method, "http://"+c.HTTPAddr(out)+"/files/f", rd)
		if forward != "" {
			req.Header.Set("X-Mure-Forward", forward)
		}
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, tc := range []struct {
		name, method, forward, rng, body string
		status                           int
		want                             string
	}{
		{"read redirected", http.MethodGet, "", "", "", http.StatusTemporaryRedirect, ""},
		{"read forwarded", http.MethodGet, "1", "", "", http.StatusOK, "v1"},
		{"range forwarded", http.MethodGet, "1", "bytes=1-1", "", http.StatusPartialContent, "1"},
		{"write redirected", http.MethodPut, "", "", "nope", http.StatusTemporaryRedirect, ""},
		{"write forwarded", http.MethodPut, "1", "", "v2", http.StatusOK, ""},
		{"read after forwarded write", http.MethodGet, "true", "", "", http.StatusOK, "v2"},
		{"delete forwarded", http.MethodDelete, "1", "", "", http.StatusNoContent, ""},
		{"read after forwarded delete", http.MethodGet, "1", "", "", http.StatusNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(tc.method, tc.forward, tc.rng, tc.body)
			if resp.StatusCode != tc.status || tc.want != "" && body != tc.want {
				t.Fatalf("%s: %d %q, want %d %q", tc.name, resp.StatusCode, body, tc.status, tc.want)
			}
			if tc.status == http.StatusOK && tc.method == http.MethodGet && resp.Header.Get("X-Mure-Forwarded-From") == "" {
				t.Fatalf("forwarded read without X-Mure-Forwarded-From")
			}
			if h := c.Nodes[0].Cluster().FSM().File("f").Holder; tc.method == http.MethodPut && h != holder {
				t.Fatalf("the write right moved to %q; forwarding must leave it with the live holder %s", h, holder)
			}
		})
	}
	for _, m := range []string{`mure_files_forwarded_total{op="read"}`, `mure_files_forwarded_total{op="write"}`, `mure_files_forwarded_total{op="delete"}`} {
		if v := scrapeMetric(t, c.HTTPAddr(out), m); v < 1 {
			t.Errorf("%s = %v on the forwarder", m, v)
		}
	}
	// The Go client asks for forwarding with an option.
	fc := client.New([]string{c.HTTPAddr(out)}, client.WithToken(c.Token()), client.WithForwarding())
	put(t, fc, "f", "v3")
	mustGet(t, fc, "f", "v3")
}

// TestCopyAndRenameOverHTTP: PUT with X-Mure-Copy-From copies a file
// server-side (from a node without a copy of the source), with a
// condition on the source version; X-Mure-Move: 1 renames.
func TestCopyAndRenameOverHTTP(t *testing.T) {
	c := testcluster.Start(t, 3)
	ctx := ctxT(t)
	if _, err := c.Client(0).SetConfig(ctx, "resume.idle", "1h"); err != nil {
		t.Fatal(err)
	}
	src := put(t, c.Client(0), "dir/src file", "payload")
	f := c.Nodes[0].Cluster().FSM().File("dir/src file")
	out := -1
	for i := range c.Nodes {
		if !f.IsValidOn(c.Nodes[i].ID()) {
			out = i
		}
	}
	if out < 0 {
		t.Fatalf("every node holds a copy: %v", f.Valid)
	}
	copyReq := func(dst string, hdr map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+c.HTTPAddr(out)+"/files/"+dst, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, dst string
		hdr       map[string]string
		status    int
	}{
		{"copy", "copy", map[string]string{"X-Mure-Copy-From": "dir/src%20file"}, http.StatusCreated},
		{"copy of another source version", "copy2", map[string]string{"X-Mure-Copy-From": "dir/src%20file", "X-Mure-Copy-From-If-Match": `"999999"`}, http.StatusPreconditionFailed},
		{"copy of a missing source", "copy3", map[string]string{"X-Mure-Copy-From": "nope"}, http.StatusNotFound},
		{"copy onto an existing file, create only", "copy", map[string]string{"X-Mure-Copy-From": "dir/src%20file", "If-None-Match": "*"}, http.StatusPreconditionFailed},
		{"rename", "moved", map[string]string{"X-Mure-Copy-From": "dir/src%20file", "X-Mure-Move": "1", "X-Mure-Copy-From-If-Match": `"` + src.ETag + `"`}, http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status, body := copyReq(tc.dst, tc.hdr); status != tc.status {
				t.Fatalf("%d %s, want %d", status, body, tc.status)
			}
		})
	}
	mustGet(t, c.Client(1), "copy", "payload")
	mustGet(t, c.Client(2), "moved", "payload")
	if _, err := c.Client(0).Get(ctx, "dir/src file", nil); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("source after rename: %v, want not found", err)
	}
}

// TestCopyNeedsRightsOnSource: a copy needs the right to read its source,
// a rename the right to write it (it deletes the source), besides the
// right to write the destination that any PUT needs.
func TestCopyNeedsRightsOnSource(t *testing.T) {
	c := testcluster.Start(t, 1)
	ctx := ctxT(t)
	admin := c.Client(0)
	put(t, admin, "secret/x", "hidden")
	put(t, admin, "shared/x", "readable")
	put(t, admin, "photos/x", "mine")
	if _, err := admin.AddUser(ctx, client.UserChange{Name: "alice", Password: ptr("alice-pass-1"), Grants: &[]string{"rw:photos/", "ro:shared/"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, src, dst string
		move           bool
		status         int
	}{
		{"copy of an unreadable source", "secret/x", "photos/stolen", false, http.StatusForbidden},
		{"rename of an unreadable source", "secret/x", "photos/stolen", true, http.StatusForbidden},
		{"rename of a read-only source", "shared/x", "photos/moved", true, http.StatusForbidden},
		{"copy of a readable source", "shared/x", "photos/copy", false, http.StatusCreated},
		{"rename within one's own prefix", "photos/x", "photos/renamed", true, http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+c.HTTPAddr(0)+"/files/"+tc.dst, nil)
			req.SetBasicAuth("alice", "alice-pass-1")
			req.Header.Set("X-Mure-Copy-From", tc.src)
			if tc.move {
				req.Header.Set("X-Mure-Move", "1")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("%d %s, want %d", resp.StatusCode, b, tc.status)
			}
		})
	}
	mustGet(t, admin, "secret/x", "hidden")
	mustGet(t, admin, "shared/x", "readable")
	if _, err := admin.Get(ctx, "photos/stolen", nil); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("photos/stolen: %v, want not found", err)
	}
}
