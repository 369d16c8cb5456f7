package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// mure s3 key create --json makes a key an S3 client signs with; after
// mure s3 key rm the same client is refused.
func TestS3KeyCommands(t *testing.T) {
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.S3Addr = testcluster.FreeAddr(t)
	}})
	nd := c.Nodes[0]
	t.Setenv("MURE_NODE", c.HTTPAddr(0))
	for _, k := range []string{"MURE_TOKEN", "MURE_USER", "MURE_PASSWORD", "MURE_DATA"} {
		t.Setenv(k, "")
	}
	out, err := run(t, runS3, "key", "create", "--json", "--data", nd.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var k s3Key
	if err := json.Unmarshal([]byte(out), &k); err != nil || k.AccessKeyID == "" || k.SecretAccessKey == "" {
		t.Fatalf("mure s3 key create --json: %q %v", out, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := s3.New(s3.Options{BaseEndpoint: aws.String("http://" + nd.S3Addr()), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(k.AccessKeyID, k.SecretAccessKey, "")})
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("cli")}); err != nil {
		t.Fatalf("signed with the new key: %v", err)
	}
	if out, err = run(t, runS3, "key", "ls", "--data", nd.Dir); err != nil || !strings.Contains(out, k.AccessKeyID) {
		t.Fatalf("mure s3 key ls: %q %v", out, err)
	}
	if _, err = run(t, runS3, "key", "rm", k.AccessKeyID, "--data", nd.Dir); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the deleted key refused", func() bool {
		_, err := cl.ListBuckets(ctx, &s3.ListBucketsInput{})
		return err != nil && strings.Contains(err.Error(), "InvalidAccessKeyId")
	})
}
