package s3_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mure-dev/mure/internal/testcluster"
)

// signedRequest is a request signed with key by aws-sdk-go-v2's signer,
// its payload unsigned.
func signedRequest(t *testing.T, method, url string, body io.Reader, size int64, id, secret string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	r.ContentLength = size
	r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err := signer.SignHTTP(context.Background(), aws.Credentials{AccessKeyID: id, SecretAccessKey: secret}, r, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestS3BadInput(t *testing.T) {
	c, key := s3Cluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := s3Client(c, 0, key)
	b := aws.String("photos")
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	base := "http://" + c.Nodes[0].S3Addr()

	t.Run("client gone mid-body", func(t *testing.T) {
		// The client announces 1 MiB, sends 64 KiB and drops the connection.
		pr, pw := io.Pipe()
		r := signedRequest(t, http.MethodPut, base+"/photos/partial.bin", pr, 1<<20, key.ID, key.Secret)
		done := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(r)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		_, _ = pw.Write(bytes.Repeat([]byte("x"), 64<<10))
		pw.CloseWithError(io.ErrClosedPipe)
		<-done
		// Nothing is visible, now or once the node has given up on the body.
		testcluster.WaitFor(t, 15*time.Second, "no partial object", func() bool {
			_, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("partial.bin")})
			return code(err) == "NotFound"
		})
	})
	t.Run("signed payload hash does not match", func(t *testing.T) {
		body := []byte("the real body")
		r, _ := http.NewRequest(http.MethodPut, base+"/photos/hash.bin", bytes.NewReader(body))
		wrong := sha256.Sum256([]byte("another body"))
		r.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(wrong[:]))
		signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
		if err := signer.SignHTTP(ctx, aws.Credentials{AccessKeyID: key.ID, SecretAccessKey: key.Secret}, r, hex.EncodeToString(wrong[:]), "s3", "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
		status, body2 := do(t, r)
		if status != 400 || !strings.Contains(body2, "<Code>XAmzContentSHA256Mismatch</Code>") {
			t.Fatalf("got %d %s", status, body2)
		}
		if _, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("hash.bin")}); code(err) != "NotFound" {
			t.Fatalf("an object whose hash did not match is visible: %v", err)
		}
	})
	for _, c := range []struct {
		name, method, path, body, want string
	}{
		{"multi-delete malformed XML", http.MethodPost, "/photos?delete", "<Delete><Object><Key>a", "MalformedXML"},
		{"multi-delete of nothing", http.MethodPost, "/photos?delete", "<Delete></Delete>", "MalformedXML"},
		{"completion malformed XML", http.MethodPost, "/photos/k?uploadId=00000000000000000000000000000000", "<CompleteMultipartUpload><Part>", "MalformedXML"},
		{"completion of an unknown upload", http.MethodPost, "/photos/k?uploadId=00000000000000000000000000000000", "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>", "NoSuchUpload"},
		{"part number out of range", http.MethodPut, "/photos/k?uploadId=00000000000000000000000000000000&partNumber=10001", "x", "InvalidArgument"},
		{"bad bucket name", http.MethodPut, "/Bad_Bucket", "", "InvalidBucketName"},
		{"unsupported sub-resource", http.MethodPut, "/photos/k?tagging", "", "NotImplemented"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := signedRequest(t, c.method, base+c.path, strings.NewReader(c.body), int64(len(c.body)), key.ID, key.Secret)
			status, body := do(t, r)
			if status < 400 || !strings.Contains(body, "<Code>"+c.want+"</Code>") {
				t.Fatalf("got %d %s, want %s", status, body, c.want)
			}
		})
	}
}

func do(t *testing.T, r *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
