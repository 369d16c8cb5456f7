package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
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
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// S3 goes through the front door in proxy mode: requests signed with
// SigV4 that reach a node's client port are S3's, and the front door
// relays the bytes (the Host signed is the front door's, unchanged).
func TestS3ThroughTheFrontDoor(t *testing.T) {
	front := testcluster.FreeAddr(t)
	c := testcluster.Start(t, 3, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.S3Addr = testcluster.FreeAddr(t)
		cfg.Front = &frontdoor.Config{Addr: front, Mode: frontdoor.ModeProxy, Policy: dispatch.NameRoundRobin}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := c.Client(0)
	if _, err := admin.SetConfig(ctx, meta.CfgReplication, "1"); err != nil {
		t.Fatal(err)
	}
	grants := []string{"rw:photos/"}
	if _, err := admin.AddUser(ctx, client.UserChange{Name: "alice", Grants: &grants}); err != nil {
		t.Fatal(err)
	}
	key, err := admin.CreateAccessKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the front door open", func() bool {
		resp, err := http.Get("http://" + front + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	s := s3.New(s3.Options{BaseEndpoint: aws.String("http://" + front), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key.ID, key.Secret, "")})
	b := aws.String("photos")
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
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
	resp, err := http.Get(ps.URL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("presigned GET through the front door: %v %v", err, resp)
	}
	resp.Body.Close()
	// The native API is unchanged on the same port.
	resp, err = http.Get("http://" + front + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("native request through the front door: %v %v", err, resp)
	}
	resp.Body.Close()
}
