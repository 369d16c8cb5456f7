package s3_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestS3AttrsReadNatively: a file put over S3 with a content type and
// standard headers is read on the native face with them, the same
// through each path: the front (byte for byte net/http's head), net/http
// and the fast lane; and a native PUT keeps the Content-Type it was sent,
// except the form type curl -d sends.
func TestS3AttrsReadNatively(t *testing.T) {
	c, key := s3ClusterWith(t, 1, func(cfg *node.Config) { cfg.FastHTTPAddr = "127.0.0.1:0" })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := s3Client(c, 0, key)
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("photos")}); err != nil {
		t.Fatal(err)
	}
	// the cache holds up to 64 KiB, the front sends up to 256 KiB itself
	small, mid := make([]byte, 4<<10), make([]byte, 200<<10)
	_, _ = rand.Read(small)
	_, _ = rand.Read(mid)
	want := map[string]string{
		"Content-Type":        "image/png",
		"Cache-Control":       "max-age=60",
		"Content-Disposition": `attachment; filename="p.png"`,
		"Content-Encoding":    "identity",
		"Content-Language":    "fr",
		"Expires":             "Thu, 01 Dec 2044 16:00:00 GMT",
	}
	for k, body := range map[string][]byte{"small.png": small, "mid.png": mid} {
		exp, _ := http.ParseTime(want["Expires"])
		if _, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String(k), Body: bytes.NewReader(body),
			ContentType: aws.String(want["Content-Type"]), CacheControl: aws.String(want["Cache-Control"]), ContentDisposition: aws.String(want["Content-Disposition"]),
			ContentEncoding: aws.String(want["Content-Encoding"]), ContentLanguage: aws.String(want["Content-Language"]), Expires: &exp}); err != nil {
			t.Fatal(err)
		}
	}
	addr := c.HTTPAddr(0)

	for _, tc := range []struct {
		path string
		body []byte
	}{{"/files/photos/small.png", small}, {"/files/photos/mid.png", mid}} {
		for _, method := range []string{"GET", "HEAD"} {
			t.Run(method+" "+tc.path, func(t *testing.T) {
				before := frontServed(t, c)
				front, fbody := rawRead(t, addr, method+" "+tc.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
				testcluster.WaitFor(t, 5*time.Second, "the front to count its read", func() bool { return frontServed(t, c) == before+1 })
				// An unknown header sends the same read to net/http.
				std, sbody := rawRead(t, addr, method+" "+tc.path+" HTTP/1.1\r\nHost: x\r\nX-Other: 1\r\n\r\n")
				if got := frontServed(t, c); got != before+1 {
					t.Fatalf("the front served %d reads, want %d", got, before+1)
				}
				if front != std {
					t.Fatalf("the front's head differs from net/http's:\n%s\nnet/http:\n%s", front, std)
				}
				wantBody := tc.body
				if method == "HEAD" {
					wantBody = nil
				}
				if !bytes.Equal(fbody, wantBody) || !bytes.Equal(sbody, wantBody) {
					t.Fatalf("bodies of %d and %d bytes, want %d", len(fbody), len(sbody), len(wantBody))
				}
				hd := parseHead(t, front)
				for k, v := range want {
					if hd.Get(k) != v {
						t.Errorf("%s: %q, want %q", k, hd.Get(k), v)
					}
				}
				if hd.Get("Content-Length") != strconv.Itoa(len(tc.body)) || !strings.HasPrefix(hd.Get("Etag"), `"`) {
					t.Errorf("Content-Length %q, ETag %q", hd.Get("Content-Length"), hd.Get("Etag"))
				}

				req, _ := http.NewRequest(method, "http://"+c.Nodes[0].FastAddr()+tc.path, nil)
				resp, err := (&http.Client{Transport: testcluster.Authorize(nil)}).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != 200 || resp.Request.URL.Host != c.Nodes[0].FastAddr() {
					t.Fatalf("fast lane: %d from %s", resp.StatusCode, resp.Request.URL.Host)
				}
				for k, v := range want {
					if resp.Header.Get(k) != v {
						t.Errorf("fast lane %s: %q, want %q", k, resp.Header.Get(k), v)
					}
				}
				if resp.Header.Get("Etag") != hd.Get("Etag") {
					t.Errorf("fast lane ETag %q, the front's %q", resp.Header.Get("Etag"), hd.Get("Etag"))
				}
			})
		}
	}

	t.Run("native PUT keeps the Content-Type", func(t *testing.T) {
		for _, tc := range []struct{ sent, kept string }{
			{"text/plain; charset=utf-8", "text/plain; charset=utf-8"},
			{"application/x-www-form-urlencoded", "application/octet-stream"}, // curl -d's default: not kept
			{"", "application/octet-stream"},
		} {
			before := frontServed(t, c)
			put := "PUT /files/photos/typed HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
			if tc.sent != "" {
				put += "Content-Type: " + tc.sent + "\r\n"
			}
			if head, _ := rawRead(t, addr, put+"\r\nhi"); !strings.HasPrefix(head, "HTTP/1.1 20") {
				t.Fatalf("PUT with %q: %s", tc.sent, head)
			}
			head, body := rawRead(t, addr, "GET /files/photos/typed HTTP/1.1\r\nHost: x\r\n\r\n")
			if got := parseHead(t, head).Get("Content-Type"); got != tc.kept || string(body) != "hi" {
				t.Fatalf("sent %q: read Content-Type %q (%q), want %q", tc.sent, got, body, tc.kept)
			}
			testcluster.WaitFor(t, 5*time.Second, "the front to answer", func() bool { return frontServed(t, c) == before+1 })
		}
		if head, _ := rawRead(t, addr, "PUT /files/photos/typed HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Type: not a type\r\n\r\nhi"); !strings.HasPrefix(head, "HTTP/1.1 400") {
			t.Fatalf("PUT with a malformed Content-Type: %s, want 400", head)
		}
	})
}

// frontServed is how many reads node 0's front answered itself.
func frontServed(t *testing.T, c *testcluster.Cluster) uint64 {
	t.Helper()
	var st node.APIStatus
	if ok, err := c.Nodes[0].Status().Service("api", &st); !ok || err != nil {
		t.Fatalf("api status: %v %v", ok, err)
	}
	return st.FrontServed
}

// rawRead sends req (with the cluster's credential) on a new connection
// and returns the answer's head as sent, without its Date line, and its
// body (Content-Length bytes; none for a HEAD).
func rawRead(t *testing.T, addr, req string) (string, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req = strings.Replace(req, "Host: x\r\n", "Host: x\r\nAuthorization: Bearer "+testcluster.TokenFor(addr)+"\r\n", 1)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	var head []string
	n := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the head: %v", err)
		}
		if line == "\r\n" {
			break
		}
		if k, v, ok := strings.Cut(line, ": "); ok && k == "Content-Length" {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		if !strings.HasPrefix(line, "Date: ") {
			head = append(head, line)
		}
	}
	if strings.HasPrefix(req, "HEAD ") {
		return strings.Join(head, ""), nil
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		t.Fatalf("reading %d bytes of body: %v", n, err)
	}
	return strings.Join(head, ""), body
}

// parseHead parses a head returned by rawRead.
func parseHead(t *testing.T, head string) http.Header {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(head+"\r\n")), nil)
	if err != nil {
		t.Fatalf("parsing %q: %v", head, err)
	}
	return resp.Header
}
