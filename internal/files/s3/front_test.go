package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/dispatch"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// S3 goes through the front door in proxy mode: requests signed with
// SigV4 that reach a node's client port are S3's, and the front door
// relays the bytes (the Host signed is the front door's, unchanged) to
// each node in turn.
func TestS3ThroughTheFrontDoor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := frontS3(t, 2)
	hc := s.Options().HTTPClient.(*http.Client)
	b := aws.String("photos")
	// Each request is a new connection to a node chosen round robin.
	for i := range 6 {
		k := aws.String("front/" + strings.Repeat("x", i))
		if _, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("through the front door")}); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k})
		if got := readAll(t, out, err); got != "through the front door" {
			t.Fatalf("get %d: %q", i, got)
		}
	}
	l, err := s.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, Prefix: aws.String("front/")})
	if err != nil || len(l.Contents) != 6 {
		t.Fatalf("listing through the front door: %v %+v", err, l)
	}
	// A multipart upload, whose parts may land on different nodes.
	big := make([]byte, 11<<20)
	_, _ = rand.Read(big)
	cu, err := s.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("big.bin")})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for n, off := int32(1), 0; off < len(big); n, off = n+1, off+5<<20 {
		p := big[off:min(off+5<<20, len(big))]
		up, err := s.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("big.bin"), UploadId: cu.UploadId, PartNumber: aws.Int32(n), Body: bytes.NewReader(p)})
		if err != nil {
			t.Fatalf("part %d through the front door: %v", n, err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(n), ETag: up.ETag})
	}
	if _, err := s.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("big.bin"), UploadId: cu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("big.bin")})
	if got := readAll(t, out, err); got != string(big) || !strings.HasSuffix(aws.ToString(out.ETag), `-3"`) {
		t.Fatalf("multipart object: %d bytes, ETag %s", len(got), aws.ToString(out.ETag))
	}
	// A presigned URL, fetched by a plain HTTP client.
	ps, err := s3.NewPresignClient(s).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("front/x")})
	if err != nil {
		t.Fatal(err)
	}
	// A plain client retries a 503 itself (the node answers it, with
	// Retry-After, while it cannot confirm its view: a loaded machine).
	testcluster.WaitFor(t, 20*time.Second, "a presigned GET through the front door", func() bool {
		resp, err := hc.Get(ps.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable && (resp.StatusCode != 200 || string(b) != "through the front door") {
			t.Fatalf("presigned GET through the front door: %d %s", resp.StatusCode, b)
		}
		return resp.StatusCode == 200
	})
	// The native API is unchanged on the same port.
	resp, err := hc.Get(aws.ToString(s.Options().BaseEndpoint) + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("native request through the front door: %d", resp.StatusCode)
	}
}

// frontS3 starts n nodes serving S3 behind a front door in proxy mode
// (round robin) and returns an S3 client of the front door, its bucket
// photos made, for the user alice (rw:photos/).
func frontS3(t testing.TB, n int) *s3.Client {
	t.Helper()
	front := testcluster.FreeAddr(t)
	c := testcluster.Start(t, n, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.S3Addr = testcluster.FreeAddr(t)
		cfg.Front = &frontdoor.Config{Addr: front, Mode: frontdoor.ModeProxy, Policy: dispatch.NameRoundRobin}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := c.Client(0)
	grants := []string{"rw:photos/"}
	if _, err := admin.AddUser(ctx, client.UserChange{Name: "alice", Grants: &grants}); err != nil {
		t.Fatal(err)
	}
	key, err := admin.CreateAccessKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	// The client's idle connections are closed before the nodes stop:
	// relays of kept-alive connections would hold the stop up.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	testcluster.WaitFor(t, 10*time.Second, "the front door open", func() bool {
		resp, err := hc.Get("http://" + front + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	// The key is in the replicated state: wait until every node has it.
	for i := range c.Nodes {
		testcluster.WaitFor(t, 10*time.Second, "the key known to every node", func() bool {
			_, err := s3Client(c, i, key).ListBuckets(ctx, &s3.ListBucketsInput{})
			return err == nil
		})
	}
	s := s3.New(s3.Options{BaseEndpoint: aws.String("http://" + front), Region: "us-east-1", UsePathStyle: true, HTTPClient: hc,
		Credentials: credentials.NewStaticCredentialsProvider(key.ID, key.Secret, "")})
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("photos")}); err != nil {
		t.Fatal(err)
	}
	return s
}
