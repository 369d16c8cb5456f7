package systest

import (
	"bufio"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/store"
	"github.com/mure-dev/mure/internal/testcluster"
)

// frontServed returns how many reads node i's front answered itself.
func frontServed(t *testing.T, c *testcluster.Cluster, i int) uint64 {
	t.Helper()
	var st node.APIStatus
	if ok, err := c.Nodes[i].Status().Service("api", &st); !ok || err != nil {
		t.Fatalf("api status: %v %v", ok, err)
	}
	return st.FrontServed
}

// expectServed waits until node i's front has answered want reads: the
// front counts a read after its last byte is sent, so the client may have
// it a moment before. More than want fails at once.
func expectServed(t *testing.T, c *testcluster.Cluster, i int, want uint64, what string) {
	t.Helper()
	testcluster.WaitFor(t, 5*time.Second, what, func() bool {
		got := frontServed(t, c, i)
		if got > want {
			t.Fatalf("%s: the front served %d, want %d", what, got, want)
		}
		return got == want
	})
}

// TestFrontOnMainPort: the main client port answers a plain whole-file read
// of a local copy in the front (from memory or by sendfile) with the same
// bytes and headers net/http gives the same read, keeps the connection,
// and hands everything else to net/http on that connection: a write read
// after it on the same connection, a range, a bad path.
func TestFrontOnMainPort(t *testing.T) {
	c := testcluster.Start(t, 2)
	cl := c.Client(0)
	// Files of at most 16 KiB (store.SectionMin) are served from memory,
	// copied after the head; larger ones of at most 64 KiB (the store's
	// SmallMax) by sendfile from their segment file at their offset
	// (decision 0053); larger ones by sendfile from a file of their own.
	bodies := map[string][]byte{}
	for p, n := range map[string]int{"small": 4 << 10, "cached": store.SectionMin, "section": store.SectionMin + 1, "segment": 40 << 10,
		"smallmax": 64 << 10, "own": 64<<10 + 1, "mid": 200 << 10, "large": 3 << 20} {
		b := make([]byte, n)
		rand.Read(b)
		bodies[p] = b
		put(t, cl, "front/"+p, string(b))
	}
	small, large := bodies["small"], bodies["large"]
	addr := c.HTTPAddr(0)

	for _, tc := range []struct {
		name  string
		path  string
		body  []byte
		front uint64 // 1: the front answers a plain read; 0: net/http does
	}{
		{"small from memory", "/files/front/small", small, 1},
		{"16 KiB from memory", "/files/front/cached", bodies["cached"], 1},
		{"16 KiB + 1 from its segment", "/files/front/section", bodies["section"], 1},
		{"40 KiB from its segment", "/files/front/segment", bodies["segment"], 1},
		{"64 KiB from its segment", "/files/front/smallmax", bodies["smallmax"], 1},
		{"64 KiB + 1 from its file", "/files/front/own", bodies["own"], 1},
		{"mid by sendfile", "/files/front/mid", bodies["mid"], 1},
		{"large by sendfile", "/files/front/large", large, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := frontServed(t, c, 0)
			fast := frontGet(t, addr, "GET "+tc.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			expectServed(t, c, 0, before+tc.front, "a plain read")
			// An unknown header sends the same read to net/http.
			slow := frontGet(t, addr, "GET "+tc.path+" HTTP/1.1\r\nHost: x\r\nX-Other: 1\r\n\r\n")
			expectServed(t, c, 0, before+tc.front, "a read with an unknown header (net/http's)")
			closing := frontGet(t, addr, "GET "+tc.path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			if closing.StatusCode != 200 {
				t.Fatalf("a read with Connection: close: %d", closing.StatusCode)
			}
			expectServed(t, c, 0, before+2*tc.front, "a read with Connection: close")
			if fast.StatusCode != 200 || string(fast.body) != string(tc.body) || slow.StatusCode != 200 || string(slow.body) != string(tc.body) {
				t.Fatalf("front %d (%d bytes), net/http %d (%d bytes), want 200 and %d bytes", fast.StatusCode, len(fast.body), slow.StatusCode, len(slow.body), len(tc.body))
			}
			for k := range slow.Header {
				if k != "Date" && fast.Header.Get(k) != slow.Header.Get(k) {
					t.Errorf("header %s: front %q, net/http %q", k, fast.Header.Get(k), slow.Header.Get(k))
				}
			}
			if len(fast.Header) != len(slow.Header) {
				t.Errorf("front headers %v, net/http %v", fast.Header, slow.Header)
			}
		})
	}

	t.Run("one connection, reads and a write", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		do := func(req string) (*http.Response, string) {
			t.Helper()
			req = withToken(req, addr)
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			method, _, _ := strings.Cut(req, " ")
			resp, err := http.ReadResponse(br, &http.Request{Method: method})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp, string(b)
		}
		if resp, b := do("GET /files/front/small HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || b != string(small) {
			t.Fatalf("first read: %d", resp.StatusCode)
		}
		if resp, _ := do("HEAD /files/front/large HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || resp.ContentLength != int64(len(large)) {
			t.Fatalf("head: %d, length %d", resp.StatusCode, resp.ContentLength)
		}
		if resp, _ := do("PUT /files/front/small HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nnew"); resp.StatusCode != 200 {
			t.Fatalf("write: %d", resp.StatusCode)
		}
		if resp, b := do("GET /files/front/small HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || b != "new" {
			t.Fatalf("read after the write on the same connection: %d %q", resp.StatusCode, b)
		}
		if resp, b := do("GET /files/front/large HTTP/1.1\r\nHost: x\r\nRange: bytes=1-2\r\n\r\n"); resp.StatusCode != 206 || b != string(large[1:3]) {
			t.Fatalf("range: %d %q", resp.StatusCode, b)
		}
		seg := bodies["segment"]
		if resp, b := do("GET /files/front/segment HTTP/1.1\r\nHost: x\r\nRange: bytes=100-20000\r\n\r\n"); resp.StatusCode != 206 || b != string(seg[100:20001]) {
			t.Fatalf("range of a file in a segment: %d, %d bytes", resp.StatusCode, len(b))
		}
		for _, p := range []string{"section", "smallmax", "own", "segment", "section"} { // back to back on one connection
			if resp, b := do("GET /files/front/" + p + " HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || b != string(bodies[p]) {
				t.Fatalf("read of %s after others on the connection: %d, %d bytes", p, resp.StatusCode, len(b))
			}
		}
		if resp, _ := do("HEAD /files/front/section HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || resp.ContentLength != int64(len(bodies["section"])) {
			t.Fatalf("head of a file in a segment: %d, length %d", resp.StatusCode, resp.ContentLength)
		}
		if resp, _ := do("GET /files/front//small HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 400 {
			t.Fatalf("bad path: %d, want 400", resp.StatusCode)
		}
	})

	// The front keeps each version's head (all but the Date): a new version
	// of the same size at the same path must get its own, never the one
	// kept for the path.
	t.Run("the head follows the version", func(t *testing.T) {
		get := "GET /files/front/same HTTP/1.1\r\nHost: x\r\n\r\n"
		var prev frontResponse
		for i, fill := range []byte{'a', 'b', 'c'} {
			body := strings.Repeat(string(fill), 4<<10)
			put(t, cl, "front/same", body)
			before := frontServed(t, c, 0)
			fast := frontGet(t, addr, get)
			again := frontGet(t, addr, get) // from the kept head
			expectServed(t, c, 0, before+2, "two plain reads")
			slow := frontGet(t, addr, "GET /files/front/same HTTP/1.1\r\nHost: x\r\nX-Other: 1\r\n\r\n")
			for _, r := range []frontResponse{fast, again} {
				if r.StatusCode != 200 || string(r.body) != body {
					t.Fatalf("version %d: %d, %d bytes", i, r.StatusCode, len(r.body))
				}
				for _, k := range []string{"Etag", "X-Mure-Version", "X-Mure-Sha256", "Last-Modified", "Content-Length"} {
					if r.Header.Get(k) != slow.Header.Get(k) {
						t.Errorf("version %d: header %s: front %q, net/http %q", i, k, r.Header.Get(k), slow.Header.Get(k))
					}
				}
			}
			if i > 0 && fast.Header.Get("Etag") == prev.Header.Get("Etag") {
				t.Fatalf("version %d answered with the previous version's Etag %s", i, prev.Header.Get("Etag"))
			}
			prev = fast
		}
	})

	t.Run("a read after a write elsewhere", func(t *testing.T) {
		for i := range 5 {
			v := strings.Repeat("v", i+1)
			put(t, c.Client(1), "front/moving", v)
			if resp := frontGet(t, addr, "GET /files/front/moving HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode == 200 && string(resp.body) != v {
				t.Fatalf("read %q after the write of %q was acknowledged", resp.body, v)
			}
		}
	})
}

type frontResponse struct {
	*http.Response
	body []byte
}

// frontGet sends one request head on a new connection and reads the answer.
func frontGet(t *testing.T, addr, req string) frontResponse {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, withToken(req, addr)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return frontResponse{resp, b}
}

// withToken adds the admin credential of addr's test cluster to a raw
// request head (after its Host line).
func withToken(req, addr string) string {
	return strings.Replace(req, "Host: x\r\n", "Host: x\r\nAuthorization: Bearer "+testcluster.TokenFor(addr)+"\r\n", 1)
}
