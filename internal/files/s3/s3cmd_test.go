package s3_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// s3cmd puts (one part and multipart), lists, gets (checking the MD5
// against the ETag), syncs a tree with odd names, copies, modifies
// headers (a copy onto itself with REPLACE) and removes.
func TestS3cmd(t *testing.T) {
	needProgram(t, "s3cmd", "from Debian (apt-get install s3cmd)")
	c, key := s3Cluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "s3cfg")
	host := c.Nodes[0].S3Addr()
	conf := "[default]\naccess_key = " + key.ID + "\nsecret_key = " + key.Secret + "\nhost_base = " + host + "\nhost_bucket = " + host +
		"\nuse_https = False\nsignature_v2 = False\nbucket_location = us-east-1\nmultipart_chunk_size_mb = 5\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	env := environWithout("AWS_")
	s3c := func(args ...string) string {
		t.Helper()
		return runAll(t, ctx, env, "s3cmd", append([]string{"-c", cfg, "--no-progress"}, args...)...)
	}
	src := filepath.Join(dir, "tree")
	tree := oddTree(t, src)

	s3c("mb", "s3://photos")
	s3c("put", filepath.Join(src, "big/multipart.bin"), "s3://photos/big.bin") // 6 MiB: two parts
	s3c("put", "--mime-type=text/plain", filepath.Join(src, "a b c.txt"), "s3://photos/one part.txt")
	if ls := s3c("ls", "s3://photos/"); !strings.Contains(ls, "s3://photos/big.bin") || !strings.Contains(ls, "s3://photos/one part.txt") {
		t.Fatalf("s3cmd ls:\n%s", ls)
	}
	info := s3c("info", "s3://photos/one part.txt")
	if !strings.Contains(info, "text/plain") || !strings.Contains(info, fmt.Sprintf("%x", md5.Sum(tree["a b c.txt"]))) {
		t.Fatalf("s3cmd info:\n%s", info)
	}
	back := filepath.Join(dir, "back.bin")
	s3c("get", "s3://photos/big.bin", back) // s3cmd compares the MD5 it computes with the object's
	if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, tree["big/multipart.bin"]) {
		t.Fatalf("s3cmd get of a multipart object: %d bytes, %v", len(got), err)
	}

	s3c("sync", src+"/", "s3://photos/tree/")
	ls := s3c("ls", "-r", "s3://photos/tree/")
	for name := range tree {
		if !strings.Contains(ls, "s3://photos/tree/"+name+"\n") {
			t.Errorf("%q not listed after s3cmd sync:\n%s", name, ls)
		}
	}
	if out := s3c("sync", "--dry-run", src+"/", "s3://photos/tree/"); strings.Contains(out, "upload:") {
		t.Fatalf("a second sync would upload again (MD5s differ?):\n%s", out)
	}
	syncBack := filepath.Join(dir, "sync-back")
	s3c("sync", "s3://photos/tree/", syncBack+"/")
	for name, want := range tree {
		if got, err := os.ReadFile(filepath.Join(syncBack, name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%q synced back: %d bytes, %v", name, len(got), err)
		}
	}

	s3c("cp", "s3://photos/one part.txt", "s3://photos/copy.txt")
	s3c("modify", "--add-header=Cache-Control:max-age=300", "s3://photos/copy.txt")
	s := s3Client(c, 0, key)
	h, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("photos"), Key: aws.String("copy.txt")})
	if err != nil || aws.ToString(h.CacheControl) != "max-age=300" || aws.ToString(h.ContentType) != "text/plain" {
		t.Fatalf("after s3cmd modify: %v %+v", err, h)
	}
	s3c("del", "--recursive", "--force", "s3://photos/")
	s3c("rb", "s3://photos")
}
