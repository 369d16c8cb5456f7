package systest

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestFastReadLane checks the fasthttp read lane against the main port: a
// whole local file is served there (from memory or by sendfile) with the
// same bytes and headers; everything else is redirected, unchanged, to the
// node's main port; and a read after a write elsewhere never returns the
// old version.
func TestFastReadLane(t *testing.T) {
	c := testcluster.Start(t, 2, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.FastHTTPAddr = "127.0.0.1:0"
	}})
	cl := c.Client(0)
	small, large := make([]byte, 4<<10), make([]byte, 3<<20) // cache holds up to 64 KiB
	rand.Read(small)
	rand.Read(large)
	put(t, cl, "fast/small", string(small))
	put(t, cl, "fast/large", string(large))
	fast := "http://" + c.Nodes[0].FastAddr()
	main := "http://" + c.HTTPAddr(0)
	noFollow := &http.Client{Transport: testcluster.Authorize(nil), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	for _, tc := range []struct {
		name, method, path string
		header             map[string]string
		wantStatus         int
		wantBody           []byte // nil: not checked
		wantLocation       string // for 307: the main port's URL
	}{
		{name: "small from memory", method: "GET", path: "/files/fast/small", wantStatus: 200, wantBody: small},
		{name: "large by sendfile", method: "GET", path: "/files/fast/large", wantStatus: 200, wantBody: large},
		{name: "head", method: "HEAD", path: "/files/fast/large", wantStatus: 200, wantBody: []byte{}},
		{name: "missing goes to main", method: "GET", path: "/files/fast/none?x=1", wantStatus: 307, wantLocation: main + "/files/fast/none?x=1"},
		{name: "range goes to main", method: "GET", path: "/files/fast/large", header: map[string]string{"Range": "bytes=0-9"}, wantStatus: 307, wantLocation: main + "/files/fast/large"},
		{name: "conditional goes to main", method: "GET", path: "/files/fast/small", header: map[string]string{"If-None-Match": `"x"`}, wantStatus: 307, wantLocation: main + "/files/fast/small"},
		{name: "write goes to main", method: "PUT", path: "/files/fast/new", wantStatus: 307, wantLocation: main + "/files/fast/new"},
		{name: "other routes go to main", method: "GET", path: "/status", wantStatus: 307, wantLocation: main + "/status"},
		{name: "bad path goes to main", method: "GET", path: "/files/a//b", wantStatus: 307, wantLocation: main + "/files/a//b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, fast+tc.path, strings.NewReader(""))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("read body: %v", err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d (body %.200q)", resp.StatusCode, tc.wantStatus, body)
			}
			if tc.wantBody != nil && !bytes.Equal(body, tc.wantBody) {
				t.Fatalf("body of %d bytes differs from the %d written", len(body), len(tc.wantBody))
			}
			if loc := resp.Header.Get("Location"); loc != tc.wantLocation {
				t.Fatalf("Location %q, want %q", loc, tc.wantLocation)
			}
			if got := resp.Header.Get("X-Mure-Node"); got != c.Nodes[0].ID() {
				t.Fatalf("X-Mure-Node %q, want %q", got, c.Nodes[0].ID())
			}
			if tc.wantStatus == 200 {
				mainResp, err := http.Head(main + tc.path)
				if err != nil {
					t.Fatal(err)
				}
				mainResp.Body.Close()
				for _, h := range []string{"Etag", "X-Mure-Version", "X-Mure-Sha256", "Content-Length", "Last-Modified"} {
					if resp.Header.Get(h) != mainResp.Header.Get(h) {
						t.Errorf("%s: fast lane %q, main port %q", h, resp.Header.Get(h), mainResp.Header.Get(h))
					}
				}
			}
		})
	}

	// A missing file, followed: the main port's JSON 404.
	resp, err := http.Get(fast + "/files/fast/none")
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Code string }
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 404 || e.Code != "not_found" {
		t.Fatalf("missing file via the fast lane: %d %q, want 404 not_found", resp.StatusCode, e.Code)
	}

	// Read after write: each version written through node 1 is what node
	// 0's fast lane returns next (fenced copies are not served there).
	other := c.Client(1)
	for v := range 5 {
		want := strings.Repeat("v", v+1)
		put(t, other, "fast/small", want)
		resp, err := http.Get(fast + "/files/fast/small")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(got) != want {
			t.Fatalf("version %d: fast lane answered %d %q after the write of %q was acknowledged", v+1, resp.StatusCode, got, want)
		}
	}
}
