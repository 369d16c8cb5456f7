package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/files"
)

const (
	testKeyID  = "MKAAAAAAAAAAAAAAAA"
	testSecret = "secret/with+odd=chars"
)

// testKeys knows one access key.
type testKeys struct{}

func (testKeys) KeySecret(id string) (auth.Principal, string, error) {
	if id != testKeyID {
		return auth.Principal{}, "", fmt.Errorf("%w: unknown", auth.ErrUnauthenticated)
	}
	return auth.Principal{User: "alice", Via: auth.ViaAccessKey}, testSecret, nil
}

// sigServer verifies each request's signature and reads its body as the
// S3 face does; it answers "ok USER BODY" or the S3 error.
func sigServer(t *testing.T, now func() time.Time) *httptest.Server {
	return verifiedServer(t, &verifier{keys: testKeys{}, now: now})
}

// verifiedServer is sigServer with the verifier v.
func verifiedServer(t *testing.T, v *verifier) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := v.verify(r)
		if err != nil {
			writeError(w, r, "test", err)
			return
		}
		b, _, err := newBody(r, s)
		if err != nil {
			writeError(w, r, "test", err)
			return
		}
		data, err := io.ReadAll(b)
		if err != nil {
			writeError(w, r, "test", err)
			return
		}
		fmt.Fprintf(w, "ok %s %s", s.principal.User, data)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// newSigner is aws-sdk-go-v2's signer as its S3 client sets it up. A new
// one per request: a signer caches signing keys by access key ID, so a
// case with a wrong secret would otherwise sign with the right one.
func newSigner() *v4.Signer {
	return v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// answer sends r and returns the status and the body (or the S3 code).
func answer(t *testing.T, r *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		if i := strings.Index(string(b), "<Code>"); i >= 0 {
			code, _, _ := strings.Cut(string(b)[i+6:], "<")
			return resp.StatusCode, code
		}
	}
	return resp.StatusCode, string(b)
}

func TestSigV4AgainstAWSSigner(t *testing.T) {
	now := time.Now()
	srv := sigServer(t, time.Now)
	good := aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret}
	body := []byte("hello, s3")

	cases := []struct {
		name     string
		creds    aws.Credentials
		path     string // escaped, as sent
		payload  string // "" : the body's hash
		at       time.Time
		tamper   func(r *http.Request)
		wantCode int
		want     string
	}{
		{name: "signed payload", creds: good, path: "/b/k.txt", at: now, wantCode: 200, want: "ok alice hello, s3"},
		{name: "unsigned payload", creds: good, path: "/b/k.txt", payload: unsignedPayload, at: now, wantCode: 200, want: "ok alice hello, s3"},
		{name: "odd key and query", creds: good, path: "/b/a%20b/%C3%A9t%C3%A9%2Bx%3D1~%21.txt?uploads=&x-id=PutObject&z=a%2Fb", at: now, wantCode: 200, want: "ok alice hello, s3"},
		{name: "wrong secret", creds: aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: "nope"}, path: "/b/k", at: now, wantCode: 403, want: CodeSignatureDoesNotMatch},
		{name: "unknown key", creds: aws.Credentials{AccessKeyID: "MKBBBBBBBBBBBBBBBB", SecretAccessKey: testSecret}, path: "/b/k", at: now, wantCode: 403, want: CodeInvalidAccessKeyID},
		{name: "clock 16 min behind", creds: good, path: "/b/k", at: now.Add(-16 * time.Minute), wantCode: 403, want: CodeRequestTimeTooSkewed},
		{name: "clock 16 min ahead", creds: good, path: "/b/k", at: now.Add(16 * time.Minute), wantCode: 403, want: CodeRequestTimeTooSkewed},
		{name: "clock 10 min behind", creds: good, path: "/b/k", at: now.Add(-10 * time.Minute), wantCode: 200, want: "ok alice hello, s3"},
		{name: "path changed after signing", creds: good, path: "/b/k", at: now, tamper: func(r *http.Request) { r.URL.Path = "/b/other" }, wantCode: 403, want: CodeSignatureDoesNotMatch},
		{name: "signed header changed", creds: good, path: "/b/k", at: now, tamper: func(r *http.Request) { r.Header.Set("X-Amz-Meta-A", "2") }, wantCode: 403, want: CodeSignatureDoesNotMatch},
		{name: "body changed after signing", creds: good, path: "/b/k", at: now, tamper: func(r *http.Request) {
			r.Body = io.NopCloser(bytes.NewReader([]byte("hello, S3")))
		}, wantCode: 400, want: CodeSHA256Mismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := http.NewRequest(http.MethodPut, srv.URL+c.path, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			r.Header.Set("X-Amz-Meta-A", "1")
			signer := newSigner()
			payload := c.payload
			if payload == "" {
				payload = sha256Hex(body)
			}
			r.Header.Set("X-Amz-Content-Sha256", payload)
			if err := signer.SignHTTP(context.Background(), c.creds, r, payload, "s3", "us-east-1", c.at); err != nil {
				t.Fatal(err)
			}
			if c.tamper != nil {
				c.tamper(r)
			}
			code, got := answer(t, r)
			if code != c.wantCode || got != c.want {
				t.Fatalf("got %d %q, want %d %q", code, got, c.wantCode, c.want)
			}
		})
	}
}

func TestSigV4PresignedAgainstAWSSigner(t *testing.T) {
	now := time.Now()
	srv := sigServer(t, time.Now)
	good := aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret}
	cases := []struct {
		name     string
		creds    aws.Credentials
		at       time.Time
		expires  string
		tamper   func(u string) string
		wantCode int
		want     string
	}{
		{name: "valid", creds: good, at: now, expires: "900", wantCode: 200, want: "ok alice "},
		{name: "expired", creds: good, at: now.Add(-20 * time.Minute), expires: "600", wantCode: 403, want: CodeAccessDenied},
		{name: "long-lived, signed an hour ago", creds: good, at: now.Add(-time.Hour), expires: "7200", wantCode: 200, want: "ok alice "},
		{name: "signed in the future", creds: good, at: now.Add(20 * time.Minute), expires: "900", wantCode: 403, want: CodeRequestTimeTooSkewed},
		{name: "expiry extended", creds: good, at: now, expires: "900", tamper: func(u string) string { return strings.Replace(u, "X-Amz-Expires=900", "X-Amz-Expires=9000", 1) }, wantCode: 403, want: CodeSignatureDoesNotMatch},
		{name: "wrong secret", creds: aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: "x"}, at: now, expires: "900", wantCode: 403, want: CodeSignatureDoesNotMatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := http.NewRequest(http.MethodGet, srv.URL+"/b/dir/a%20file.txt?X-Amz-Expires="+c.expires, nil)
			if err != nil {
				t.Fatal(err)
			}
			u, _, err := newSigner().PresignHTTP(context.Background(), c.creds, r, unsignedPayload, "s3", "us-east-1", c.at)
			if err != nil {
				t.Fatal(err)
			}
			if c.tamper != nil {
				u = c.tamper(u)
			}
			r2, _ := http.NewRequest(http.MethodGet, u, nil)
			code, got := answer(t, r2)
			if code != c.wantCode || got != c.want {
				t.Fatalf("got %d %q, want %d %q (url %s)", code, got, c.wantCode, c.want, u)
			}
		})
	}
}

// chunkedBody encodes data as aws-chunked with signatures chained from
// seed by aws-sdk-go-v2's stream signer (its string to sign with empty
// headers is S3's chunk string to sign).
func chunkedBody(t *testing.T, creds aws.Credentials, seed string, at time.Time, data []byte, chunk int, corrupt int) []byte {
	t.Helper()
	seedBytes, _ := hex.DecodeString(seed)
	ss := v4.NewStreamSigner(creds, "s3", "us-east-1", seedBytes)
	var out bytes.Buffer
	for i := 0; ; i++ {
		n := min(chunk, len(data))
		part := data[:n]
		data = data[n:]
		sig, err := ss.GetSignature(context.Background(), nil, part, at)
		if err != nil {
			t.Fatal(err)
		}
		if i == corrupt {
			part = append([]byte("X"), part[1:]...)
		}
		fmt.Fprintf(&out, "%x;chunk-signature=%x\r\n", len(part), sig)
		out.Write(part)
		out.WriteString("\r\n")
		if n == 0 {
			return out.Bytes()
		}
	}
}

func TestSigV4SignedChunks(t *testing.T) {
	srv := sigServer(t, time.Now)
	creds := aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret}
	data := bytes.Repeat([]byte("0123456789abcdef"), 5000) // 80000 bytes: 64 KiB chunks and a rest
	for _, c := range []struct {
		name     string
		corrupt  int
		wantCode int
	}{{"intact", -1, 200}, {"second chunk altered", 1, 403}} {
		t.Run(c.name, func(t *testing.T) {
			at := time.Now()
			signer := newSigner()
			r, _ := http.NewRequest(http.MethodPut, srv.URL+"/b/chunked", nil)
			r.Header.Set("Content-Encoding", "aws-chunked")
			r.Header.Set("X-Amz-Decoded-Content-Length", fmt.Sprint(len(data)))
			r.Header.Set("X-Amz-Content-Sha256", streamingSigned)
			// The length of the encoded body is signed: sign with a
			// placeholder body of the right length, then send the real one.
			enc := chunkedBody(t, creds, strings.Repeat("0", 64), at, data, 64<<10, -1)
			r.ContentLength = int64(len(enc))
			if err := signer.SignHTTP(context.Background(), creds, r, streamingSigned, "s3", "us-east-1", at); err != nil {
				t.Fatal(err)
			}
			_, seed, _ := strings.Cut(r.Header.Get("Authorization"), "Signature=")
			enc = chunkedBody(t, creds, seed, at, data, 64<<10, c.corrupt)
			r.Body = io.NopCloser(bytes.NewReader(enc))
			code, got := answer(t, r)
			if code != c.wantCode {
				t.Fatalf("got %d %.80q, want %d", code, got, c.wantCode)
			}
			if code == 200 && got != "ok alice "+string(data) {
				t.Fatalf("decoded body differs: %.80q", got)
			}
		})
	}
}

func TestUnsignedChunksWithTrailingChecksum(t *testing.T) {
	srv := sigServer(t, time.Now)
	creds := aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret}
	data := []byte(strings.Repeat("trailing checksum ", 4000))
	sum := crc32.ChecksumIEEE(data)
	good := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, sum))
	bad := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, sum+1))
	for _, c := range []struct {
		name, trailer string
		wantCode      int
		want          string
	}{
		{"right crc32", "x-amz-checksum-crc32:" + good, 200, "ok alice " + string(data)},
		{"wrong crc32", "x-amz-checksum-crc32:" + bad, 400, CodeBadDigest},
		{"trailer missing", "", 400, CodeInvalidRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			var enc bytes.Buffer
			for rest := data; ; {
				n := min(len(rest), 8192)
				fmt.Fprintf(&enc, "%x\r\n", n)
				if n == 0 {
					break
				}
				enc.Write(rest[:n])
				enc.WriteString("\r\n")
				rest = rest[n:]
			}
			if c.trailer != "" {
				enc.WriteString(c.trailer + "\r\n")
			}
			enc.WriteString("\r\n")
			r, _ := http.NewRequest(http.MethodPut, srv.URL+"/b/trailer", bytes.NewReader(enc.Bytes()))
			r.Header.Set("Content-Encoding", "aws-chunked")
			r.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32")
			r.Header.Set("X-Amz-Decoded-Content-Length", fmt.Sprint(len(data)))
			r.Header.Set("X-Amz-Content-Sha256", streamingUnsignedTrail)
			if err := newSigner().SignHTTP(context.Background(), creds, r, streamingUnsignedTrail, "s3", "us-east-1", time.Now()); err != nil {
				t.Fatal(err)
			}
			code, got := answer(t, r)
			if code != c.wantCode || got != c.want {
				t.Fatalf("got %d %.60q, want %d %.60q", code, got, c.wantCode, c.want)
			}
		})
	}
}

// The file API's errors become S3's codes; a message that names a native
// API option is replaced.
func TestFileErrorCodes(t *testing.T) {
	for _, c := range []struct {
		err    error
		code   string
		status int
	}{
		{files.NewError(files.ErrNotFound, "x"), CodeNoSuchKey, 404},
		{files.NewError(files.ErrPrecondition, "x"), CodePreconditionFailed, 412},
		{&files.TooLargeError{Size: 10, Limit: 5}, CodeEntityTooLarge, 400},
		{files.NewError(files.ErrTruncated, "x"), CodeIncompleteBody, 400},
		{&files.UnavailableError{Kind: files.ErrNoQuorum, Msg: "add ?stale=1", RetryAfter: time.Second}, CodeServiceUnavailable, 503},
		{errors.New("boom"), CodeInternalError, 500},
	} {
		e := fileError(c.err)
		if e.Code != c.code || e.Status != c.status || strings.Contains(e.Message, "stale=1") {
			t.Errorf("%v: got %s %d %q, want %s %d", c.err, e.Code, e.Status, e.Message, c.code, c.status)
		}
	}
}

// TestForeignAuthorizationNotEchoed: an Authorization header that is not
// SigV4 is refused with a message (also logged) that names its scheme but
// holds nothing of the credential.
func TestForeignAuthorizationNotEchoed(t *testing.T) {
	tok := auth.NewToken()
	v := &verifier{keys: testKeys{}, now: time.Now}
	for _, c := range []struct{ header, scheme string }{
		{tok, "not one"},
		{"Bearer " + tok, `"Bearer"`},
		{"Basic " + base64.StdEncoding.EncodeToString([]byte("alice:pw")), `"Basic"`},
		{tok + " trailing", "not one"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/b/k", nil)
		r.Header.Set("Authorization", c.header)
		_, err := v.verify(r)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeAuthorizationHeader {
			t.Fatalf("%.12s...: %v, want %s", c.header, err, CodeAuthorizationHeader)
		}
		secret := strings.TrimPrefix(strings.TrimPrefix(c.header, "Bearer "), "Basic ")
		if strings.Contains(e.Message, secret[:12]) || !strings.Contains(e.Message, c.scheme) {
			t.Errorf("message %q: want the scheme %s and nothing of the credential", e.Message, c.scheme)
		}
	}
}
