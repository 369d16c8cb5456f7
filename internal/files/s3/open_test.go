package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// TestOpenAcceptsAnyKey: with --auth=false (decision 0060) a request
// signed with a key no one made, and an aws-chunked body whose chunk
// signatures chain from it, are accepted as the open node's anonymous
// admin; the form of the request is still checked. With auth on, the same
// requests are refused.
func TestOpenAcceptsAnyKey(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: "ANYKEY", SecretAccessKey: "any secret"}
	data := bytes.Repeat([]byte("0123456789abcdef"), 5000)
	header := func(url string) *http.Request {
		r, _ := http.NewRequest(http.MethodPut, url+"/b/k", strings.NewReader("v"))
		if err := newSigner().SignHTTP(context.Background(), creds, r, sha256Hex([]byte("v")), "s3", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
		r.Header.Set("X-Amz-Content-Sha256", sha256Hex([]byte("v")))
		return r
	}
	chunked := func(url string) *http.Request {
		at := time.Now()
		r, _ := http.NewRequest(http.MethodPut, url+"/b/chunked", nil)
		r.Header.Set("Content-Encoding", "aws-chunked")
		r.Header.Set("X-Amz-Decoded-Content-Length", fmt.Sprint(len(data)))
		r.Header.Set("X-Amz-Content-Sha256", streamingSigned)
		enc := chunkedBody(t, creds, strings.Repeat("0", 64), at, data, 64<<10, -1)
		r.ContentLength = int64(len(enc))
		if err := newSigner().SignHTTP(context.Background(), creds, r, streamingSigned, "s3", "us-east-1", at); err != nil {
			t.Fatal(err)
		}
		_, seed, _ := strings.Cut(r.Header.Get("Authorization"), "Signature=")
		r.Body = io.NopCloser(bytes.NewReader(chunkedBody(t, creds, seed, at, data, 64<<10, -1)))
		return r
	}
	malformed := func(url string) *http.Request {
		r := header(url)
		r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=ANYKEY/20260101/us-east-1/s3/aws4_request")
		return r
	}
	for _, c := range []struct {
		name     string
		open     bool
		req      func(url string) *http.Request
		wantCode int
		want     string // the body, or the S3 code
	}{
		{"auth off, header signed", true, header, 200, "ok anonymous v"},
		{"auth off, signed chunks", true, chunked, 200, "ok anonymous " + string(data)},
		{"auth off, malformed", true, malformed, 400, CodeAuthorizationHeader},
		{"auth on, header signed", false, header, 403, CodeInvalidAccessKeyID},
		{"auth on, signed chunks", false, chunked, 403, CodeInvalidAccessKeyID},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := verifiedServer(t, &verifier{keys: testKeys{}, now: time.Now, open: c.open})
			code, got := answer(t, c.req(srv.URL))
			if code != c.wantCode || got != c.want {
				t.Fatalf("got %d %.80q, want %d %.80q", code, got, c.wantCode, c.want)
			}
		})
	}
}
