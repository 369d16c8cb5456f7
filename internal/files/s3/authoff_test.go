package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestS3AuthOffAnyKey: on a node started with --auth=false, where no
// access key can be made, the aws cli signing with a key and secret it
// made up works as unsigned requests do: it makes a bucket, uploads (a
// multipart upload too), lists and downloads (decision 0060). Asked for a
// key, the node says why none is needed.
func TestS3AuthOffAnyKey(t *testing.T) {
	need(t, "aws", "--version")
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.S3Addr = testcluster.FreeAddr(t)
		cfg.Auth.Open = true
	}})
	c.WaitReady(0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Client(0).CreateAccessKey(ctx, ""); err == nil || !strings.Contains(err.Error(), "no key is needed") {
		t.Errorf("a key asked of an --auth=false node: %v, want why none is needed", err)
	}
	env := awsEnv(t, client.AccessKey{ID: "MADEUPKEY", Secret: "made up secret"})
	ep := "http://" + c.Nodes[0].S3Addr()
	dir := t.TempDir()
	data := make([]byte, 9<<20) // over the cli's 8 MiB multipart threshold
	_, _ = rand.Read(data)
	src := filepath.Join(dir, "big.bin")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "mb", "s3://open")
	run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "cp", src, "s3://open/big.bin")
	if ls := run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "ls", "s3://open/"); !strings.Contains(ls, " 9437184 big.bin") {
		t.Fatalf("aws s3 ls:\n%s", ls)
	}
	back := filepath.Join(dir, "back.bin")
	run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "cp", "s3://open/big.bin", back)
	if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("round trip through aws s3 cp: %d bytes, equal %v, %v", len(got), bytes.Equal(got, data), err)
	}
}
