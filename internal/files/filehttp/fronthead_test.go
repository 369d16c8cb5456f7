package filehttp

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// TestParseHead: the front answers only the one narrow shape of request;
// anything else, valid or not, is handed to net/http.
func TestParseHead(t *testing.T) {
	const ok = "GET /files/a/b.txt HTTP/1.1\r\nHost: h:1\r\n\r\n"
	var memo headMemo
	for _, tc := range []struct {
		name, head string
		want       headVerdict
		key        string
	}{
		{"plain get", ok, headServe, "a/b.txt"},
		{"head", "HEAD /files/a HTTP/1.1\r\nHost: h\r\n\r\n", headServe, "a"},
		{"authorized", "GET /files/a HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer t1\r\n\r\n", headServe, "a"},
		{"another token", "GET /files/a HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer t2\r\n\r\n", headServe, "a"},
		{"escaped", "GET /files/a%20b HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer t2\r\n\r\n", headServe, "a b"},
		{"wrk", "GET /files/bench/f4096 HTTP/1.1\r\nHost: 127.0.0.1:7990\r\n\r\n", headServe, "bench/f4096"},
		{"curl", "GET /files/a HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n", headServe, "a"},
		{"go client", "GET /files/a HTTP/1.1\r\nHost: x\r\nUser-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\n\r\n", headServe, "a"},
		{"escaped key", "GET /files/a%20b/c%2Bd HTTP/1.1\r\nHost: h\r\n\r\n", headServe, "a b/c+d"},
		{"bearer", "GET /files/a HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer t\r\n\r\n", headServe, "a"},
		{"keep-alive", "GET /files/a HTTP/1.1\r\nHost: h\r\nConnection: Keep-Alive\r\n\r\n", headServe, "a"},
		{"close", "GET /files/a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", headServe, "a"},
		{"lower-case names", "GET /files/a HTTP/1.1\r\nhost: h\r\n\r\n", headServe, "a"},
		{"incomplete", "GET /files/a HTTP/1.1\r\nHost: h\r\n", headIncomplete, ""},
		{"incomplete line", "GET /fi", headIncomplete, ""},
		{"put", "PUT /files/a HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx", headHandOver, ""},
		{"get with body", "GET /files/a HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx", headHandOver, ""},
		{"chunked", "GET /files/a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", headHandOver, ""},
		{"expect", "GET /files/a HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n", headHandOver, ""},
		{"range", "GET /files/a HTTP/1.1\r\nHost: h\r\nRange: bytes=0-1\r\n\r\n", headHandOver, ""},
		{"conditional", "GET /files/a HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"1\"\r\n\r\n", headHandOver, ""},
		{"query", "GET /files/a?stale=1 HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"fragment", "GET /files/a#x HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"absolute form", "GET http://h/files/a HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"double slash", "GET /files/a//b HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"dot segment", "GET /files/a/./b HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"escaped dot segment", "GET /files/a/%2e%2e/b HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"escaped slash makes //", "GET /files/a%2F%2Fb HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"bad escape", "GET /files/a%zz HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"escaped NUL", "GET /files/a%00 HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"trailing slash", "GET /files/a/ HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"not files", "GET /status HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"http/1.0", "GET /files/a HTTP/1.0\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"http/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", headHandOver, ""},
		{"lower-case method", "get /files/a HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"two spaces", "GET  /files/a HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"tab separator", "GET\t/files/a HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
		{"no host", "GET /files/a HTTP/1.1\r\n\r\n", headHandOver, ""},
		{"two hosts", "GET /files/a HTTP/1.1\r\nHost: h\r\nHost: i\r\n\r\n", headHandOver, ""},
		{"odd host", "GET /files/a HTTP/1.1\r\nHost: h/x\r\n\r\n", headHandOver, ""},
		{"two authorizations", "GET /files/a HTTP/1.1\r\nHost: h\r\nAuthorization: a\r\nAuthorization: b\r\n\r\n", headHandOver, ""},
		{"space before colon", "GET /files/a HTTP/1.1\r\nHost : h\r\n\r\n", headHandOver, ""},
		{"obs-fold", "GET /files/a HTTP/1.1\r\nHost: h\r\nUser-Agent: a\r\n b\r\n\r\n", headHandOver, ""},
		{"bare LF", "GET /files/a HTTP/1.1\nHost: h\n\n", headHandOver, ""},
		{"bare LF in a header", "GET /files/a HTTP/1.1\r\nHost: h\nX: y\r\n\r\n", headHandOver, ""},
		{"bare CR", "GET /files/a HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", headHandOver, ""},
		{"control byte in value", "GET /files/a HTTP/1.1\r\nHost: h\r\nUser-Agent: a\x01b\r\n\r\n", headHandOver, ""},
		{"upgrade", "GET /files/a HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", headHandOver, ""},
		{"unknown header", "GET /files/a HTTP/1.1\r\nHost: h\r\nX-Other: 1\r\n\r\n", headHandOver, ""},
		{"too long", "GET /files/a HTTP/1.1\r\nHost: h\r\nUser-Agent: " + strings.Repeat("a", maxFrontHead) + "\r\n\r\n", headHandOver, ""},
		{"non-ASCII target", "GET /files/caf\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n", headHandOver, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, v := parseHead([]byte(tc.head))
			if v != tc.want || v == headServe && h.key != tc.key {
				t.Fatalf("verdict %d key %q, want %d %q", v, h.key, tc.want, tc.key)
			}
			// One connection's heads in turn (the table's), each twice:
			// what the memo reuses is what parsing gives.
			for range 2 {
				if mh, mv := parseHeadMemo([]byte(tc.head), &memo); mh != h || mv != v {
					t.Fatalf("with the memo %+v %d, without %+v %d", mh, mv, h, v)
				}
			}
			if v == headServe && h.n != strings.Index(tc.head, "\r\n\r\n")+4 {
				t.Fatalf("head of %d bytes, want %d", h.n, strings.Index(tc.head, "\r\n\r\n")+4)
			}
		})
	}
}

// FuzzParseHead checks the front's parser against net/http's: whatever it
// agrees to answer, net/http reads as the same request (method, key, no
// body, no range or condition), and it never panics. Run it with
//
//	go test ./internal/files/filehttp -run XXX -fuzz '^FuzzParseHead$' -fuzztime 60s -parallel=1
//
// (the seeds and testdata/fuzz/FuzzParseHead run with every go test).
func FuzzParseHead(f *testing.F) {
	for _, s := range []string{
		"GET /files/a HTTP/1.1\r\nHost: h\r\n\r\n",
		"HEAD /files/a/b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
		"GET /files/a%20b HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer x\r\nX-Mure-Client: c\r\n\r\nGET /files/a HTTP/1.1\r\n",
		"GET /files/a HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
		"GET /files/a HTTP/1.1\r\nHost: h\r\n  folded\r\n\r\n",
		"GET /files/a//b HTTP/1.1\r\nHost: h\r\n\r\n",
		"PUT /files/a HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
		"GET /files/%2e%2E/a HTTP/1.1\r\nhost: h\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, v := parseHead(b)
		if v != headServe {
			return
		}
		if h.n > len(b) || !bytes.HasSuffix(b[:h.n], []byte("\r\n\r\n")) {
			t.Fatalf("head of %d bytes in %q", h.n, b)
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b[:h.n])))
		if err != nil {
			t.Fatalf("the front would answer %q, which net/http refuses: %v", b[:h.n], err)
		}
		want := http.MethodHead
		if h.get {
			want = http.MethodGet
		}
		switch {
		case req.Method != want:
			t.Fatalf("method %s, net/http read %s", want, req.Method)
		case req.URL.Path != FilesPrefix+h.key:
			t.Fatalf("key %q, net/http read path %q", h.key, req.URL.Path)
		case req.ContentLength != 0 || len(req.TransferEncoding) > 0:
			t.Fatalf("a request with a body: %q", b[:h.n])
		case req.URL.RawQuery != "" || req.Header.Get("Expect") != "" || !plainRead(req):
			t.Fatalf("not a plain read: %q", b[:h.n])
		case req.Header.Get("Authorization") != h.auth:
			t.Fatalf("authorization %q, net/http read %q", h.auth, req.Header.Get("Authorization"))
		case req.Close != h.close:
			t.Fatalf("close %v, net/http read %v", h.close, req.Close)
		}
	})
}

// BenchmarkParseHead: the front's cost of reading wrk's request head.
func BenchmarkParseHead(b *testing.B) {
	head := []byte("GET /files/bench/f4096 HTTP/1.1\r\nHost: 127.0.0.1:7990\r\nUser-Agent: curl/8\r\nAccept: */*\r\n\r\n")
	b.ReportAllocs()
	for b.Loop() {
		if _, v := parseHead(head); v != headServe {
			b.Fatal(v)
		}
	}
}
