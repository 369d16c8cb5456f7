package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
)

// awsEnv is the environment of the aws cli and boto3 for node i: the
// key, a region, path-style addressing, no user configuration.
func awsEnv(t *testing.T, key client.AccessKey) []string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "aws-config")
	if err := os.WriteFile(cfg, []byte("[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "AWS_ACCESS_KEY_ID="+key.ID, "AWS_SECRET_ACCESS_KEY="+key.Secret,
		"AWS_CONFIG_FILE="+cfg, "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_DEFAULT_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true")
}

// need skips the test when a client is missing; scripts/test.sh
// installs them (pip install awscli boto3).
func need(t *testing.T, cmd string, args ...string) {
	t.Helper()
	if err := exec.Command(cmd, args...).Run(); err != nil {
		t.Skipf("%s %s fails (%v): scripts/test.sh installs the S3 clients with pip install awscli boto3", cmd, strings.Join(args, " "), err)
	}
}

func run(t *testing.T, ctx context.Context, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

func TestS3AWSCLI(t *testing.T) {
	need(t, "aws", "--version")
	c, key := s3Cluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := awsEnv(t, key)
	// Node 2 serves the CLI: with one copy per file, it holds few of them.
	ep := "http://" + c.Nodes[2].S3Addr()
	dir := t.TempDir()
	data := make([]byte, 3<<20+17)
	_, _ = rand.Read(data)
	src := filepath.Join(dir, "photo one.bin")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "mb", "s3://photos")
	run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "cp", src, "s3://photos/2026/photo one.bin")
	ls := run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "ls", "--recursive", "s3://photos/")
	if !strings.Contains(ls, "2026/photo one.bin") || !strings.Contains(ls, " 3145745 ") {
		t.Fatalf("aws s3 ls:\n%s", ls)
	}
	back := filepath.Join(dir, "back.bin")
	run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "cp", "s3://photos/2026/photo one.bin", back)
	got, err := os.ReadFile(back)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("round trip through aws s3 cp: %d bytes, equal %v, %v", len(got), bytes.Equal(got, data), err)
	}
	// The native API sees the same file.
	st, err := c.Client(0).Stat(ctx, "photos/2026/photo one.bin")
	if err != nil || st.Size != int64(len(data)) {
		t.Fatalf("native stat: %+v %v", st, err)
	}
	head := run(t, ctx, env, "aws", "--endpoint-url", ep, "s3api", "head-object", "--bucket", "photos", "--key", "2026/photo one.bin")
	if !strings.Contains(head, `"ContentLength": 3145745`) {
		t.Fatalf("s3api head-object:\n%s", head)
	}
	// Above aws cli's 8 MiB threshold: a multipart upload (8 MiB parts)
	// and a ranged, parallel download.
	big := make([]byte, 9<<20+5)
	_, _ = rand.Read(big)
	bigSrc := filepath.Join(dir, "big.bin")
	if err := os.WriteFile(bigSrc, big, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "cp", bigSrc, "s3://photos/big.bin")
	head = run(t, ctx, env, "aws", "--endpoint-url", ep, "s3api", "head-object", "--bucket", "photos", "--key", "big.bin")
	if !strings.Contains(head, fmt.Sprintf(`"ContentLength": %d`, len(big))) {
		t.Fatalf("head-object of the multipart upload:\n%s", head)
	}
	bigBack := filepath.Join(dir, "big-back.bin")
	run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "cp", "s3://photos/big.bin", bigBack)
	if got, err := os.ReadFile(bigBack); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("multipart round trip: %d bytes, %v", len(got), err)
	}
	if out := run(t, ctx, env, "aws", "--endpoint-url", ep, "s3api", "list-multipart-uploads", "--bucket", "photos"); strings.Contains(out, "UploadId") {
		t.Fatalf("an upload is left after aws s3 cp:\n%s", out)
	}
	run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "rm", "s3://photos/big.bin")
	run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "rm", "s3://photos/2026/photo one.bin")
	if ls := run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "ls", "--recursive", "s3://photos/"); strings.TrimSpace(ls) != "" {
		t.Fatalf("after rm: %s", ls)
	}
	run(t, ctx, env, "aws", "--endpoint-url", ep, "s3", "rb", "s3://photos")
}

const boto3Script = `
import os, sys, boto3, botocore
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=sys.argv[1], config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
s3.create_bucket(Bucket="photos")
s3.put_object(Bucket="photos", Key="dir/a.txt", Body=b"hello boto3")
assert s3.get_object(Bucket="photos", Key="dir/a.txt")["Body"].read() == b"hello boto3"
assert s3.get_object(Bucket="photos", Key="dir/a.txt", Range="bytes=6-10")["Body"].read() == b"boto3"
keys = [o["Key"] for o in s3.list_objects_v2(Bucket="photos", Prefix="dir/")["Contents"]]
assert keys == ["dir/a.txt"], keys
url = s3.generate_presigned_url("get_object", Params={"Bucket": "photos", "Key": "dir/a.txt"}, ExpiresIn=300)
import urllib.request
assert urllib.request.urlopen(url).read() == b"hello boto3"
# boto3's default presigning is Signature Version 2: refused with a clear error.
v2 = boto3.client("s3", endpoint_url=sys.argv[1], config=Config(s3={"addressing_style": "path"}))
try:
    urllib.request.urlopen(v2.generate_presigned_url("get_object", Params={"Bucket": "photos", "Key": "dir/a.txt"}))
    sys.exit("a SigV2 URL was accepted")
except urllib.error.HTTPError as e:
    body = e.read().decode()
    assert e.code == 400 and "Signature Version 2" in body, (e.code, body)
try:
    s3.get_object(Bucket="photos", Key="missing")
    sys.exit("a missing key was found")
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "NoSuchKey", e.response
s3.delete_object(Bucket="photos", Key="dir/a.txt")
s3.delete_bucket(Bucket="photos")
print("ok")
`

func TestS3Boto3(t *testing.T) {
	need(t, "python3", "-c", "import boto3")
	c, key := s3Cluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := run(t, ctx, awsEnv(t, key), "python3", "-c", boto3Script, "http://"+c.Nodes[1].S3Addr())
	if strings.TrimSpace(out) != "ok" {
		t.Fatalf("boto3: %s", out)
	}
}
