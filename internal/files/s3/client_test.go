package s3_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// s3Cluster starts n nodes, each serving S3, with one copy per file (so
// that some node holds neither a copy nor the write right of a file), and
// makes the user alice (rw:photos/, ro:shared/) with an access key.
func s3Cluster(t testing.TB, n int) (*testcluster.Cluster, client.AccessKey) {
	t.Helper()
	return s3ClusterWith(t, n, nil)
}

// s3ClusterWith is s3Cluster with more configuration by setup.
func s3ClusterWith(t testing.TB, n int, setup func(cfg *node.Config)) (*testcluster.Cluster, client.AccessKey) {
	t.Helper()
	c := testcluster.Start(t, n, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.S3Addr = testcluster.FreeAddr(t)
		if setup != nil {
			setup(cfg)
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := c.Client(0)
	if _, err := admin.SetConfig(ctx, meta.CfgReplication, "1"); err != nil {
		t.Fatal(err)
	}
	grants := []string{"rw:photos/", "ro:shared/"}
	if _, err := admin.AddUser(ctx, client.UserChange{Name: "alice", Grants: &grants}); err != nil {
		t.Fatal(err)
	}
	key, err := admin.CreateAccessKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// s3Client is aws-sdk-go-v2's S3 client for node i, with its defaults
// (checksums included) and path-style addressing.
func s3Client(c *testcluster.Cluster, i int, key client.AccessKey) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String("http://" + c.Nodes[i].S3Addr()),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(key.ID, key.Secret, ""),
		UsePathStyle: true,
	})
}

// code is the S3 error code of err ("" if none).
func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func readAll(t *testing.T, out *s3.GetObjectOutput, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestS3ThroughEveryNode(t *testing.T) {
	c, key := s3Cluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s0, s1, s2 := s3Client(c, 0, key), s3Client(c, 1, key), s3Client(c, 2, key)

	if _, err := s0.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("photos")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("photos")}); code(err) != "BucketAlreadyOwnedByYou" {
		t.Fatalf("second create: %v", err)
	}
	body := strings.Repeat("mure s3 ", 1000)
	put, err := s1.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String("2026/a b+é.txt"), Body: strings.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	// Every node answers, including those with neither a copy nor the right.
	holders := copiesOf(t, c, "photos/2026/a b+é.txt")
	if len(holders) == 3 {
		t.Fatalf("every node holds a copy (%v): the test needs one that does not", holders)
	}
	for i, s := range []*s3.Client{s0, s1, s2} {
		out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("2026/a b+é.txt")})
		if got := readAll(t, out, err); got != body {
			t.Fatalf("node %d (copies on %v): got %d bytes, want %d", i, holders, len(got), len(body))
		}
		if aws.ToString(out.ETag) != aws.ToString(put.ETag) {
			t.Fatalf("node %d: ETag %s, the put answered %s", i, aws.ToString(out.ETag), aws.ToString(put.ETag))
		}
		// Ranges, opened at their offset (a node without a copy asks the
		// holder for just those bytes) or served from the whole object.
		for _, rg := range []struct{ spec, want, contentRange string }{
			{"bytes=4001-4010", body[4001:4011], "bytes 4001-4010/8000"},
			{"bytes=7990-", body[7990:], "bytes 7990-7999/8000"},
			{"bytes=7995-9000", body[7995:], "bytes 7995-7999/8000"},
			{"bytes=-5", body[7995:], "bytes 7995-7999/8000"},
			{"bytes=0-0", body[:1], "bytes 0-0/8000"},
		} {
			out, err = s.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("2026/a b+é.txt"), Range: aws.String(rg.spec)})
			if got := readAll(t, out, err); got != rg.want || aws.ToString(out.ContentRange) != rg.contentRange {
				t.Fatalf("node %d, %s: read %q (Content-Range %s), want %q (%s)", i, rg.spec, got, aws.ToString(out.ContentRange), rg.want, rg.contentRange)
			}
		}
	}

	// The object is a file for the native API, and the reverse.
	rd, err := c.Client(2).Get(ctx, "photos/2026/a b+é.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	native, _ := io.ReadAll(rd)
	rd.Close()
	if string(native) != body {
		t.Fatalf("native read of an S3 object: %d bytes", len(native))
	}
	if _, err := c.Client(0).Put(ctx, "photos/native.txt", strings.NewReader("from the native API"), nil); err != nil {
		t.Fatal(err)
	}
	out, err := s2.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("native.txt")})
	if got := readAll(t, out, err); got != "from the native API" {
		t.Fatalf("S3 read of a native file: %q", got)
	}
}

// copiesOf returns the nodes holding a valid copy of path.
func copiesOf(t *testing.T, c *testcluster.Cluster, path string) []string {
	t.Helper()
	hc := &http.Client{Transport: testcluster.Authorize(http.DefaultTransport), Timeout: 10 * time.Second}
	resp, err := hc.Get("http://" + c.HTTPAddr(0) + "/status/files/" + strings.ReplaceAll(path, " ", "%20"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Valid []string `json:"valid"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("status of %s: %d %v", path, resp.StatusCode, err)
	}
	return st.Valid
}

func TestS3Operations(t *testing.T) {
	c, key := s3Cluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := s3Client(c, 0, key)
	b := aws.String("photos")
	if _, err := s.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: b}); code(err) != "NotFound" {
		t.Fatalf("head of a missing bucket: %v", err)
	}
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	keys := []string{"a.txt", "dir/b.txt", "dir/c.txt", "dir/sub/d.txt", "e.txt", "z~ü.txt"}
	for _, k := range keys {
		if _, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String(k), Body: strings.NewReader("0123456789-" + k)}); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}

	t.Run("list buckets", func(t *testing.T) {
		out, err := s.ListBuckets(ctx, &s3.ListBucketsInput{})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Buckets) != 1 || aws.ToString(out.Buckets[0].Name) != "photos" {
			t.Fatalf("buckets: %+v", out.Buckets)
		}
	})
	t.Run("list v2 pages", func(t *testing.T) {
		var got []string
		p := s3.NewListObjectsV2Paginator(s, &s3.ListObjectsV2Input{Bucket: b, MaxKeys: aws.Int32(2)})
		pages := 0
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, o := range out.Contents {
				got = append(got, aws.ToString(o.Key))
			}
		}
		if !slices.Equal(got, keys) || pages != 3 {
			t.Fatalf("got %v in %d pages, want %v in 3", got, pages, keys)
		}
	})
	t.Run("list v2 delimiter and prefix", func(t *testing.T) {
		out, err := s.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, Prefix: aws.String("dir/"), Delimiter: aws.String("/")})
		if err != nil {
			t.Fatal(err)
		}
		var ks, ps []string
		for _, o := range out.Contents {
			ks = append(ks, aws.ToString(o.Key))
		}
		for _, p := range out.CommonPrefixes {
			ps = append(ps, aws.ToString(p.Prefix))
		}
		if !slices.Equal(ks, []string{"dir/b.txt", "dir/c.txt"}) || !slices.Equal(ps, []string{"dir/sub/"}) || aws.ToInt32(out.KeyCount) != 3 {
			t.Fatalf("keys %v prefixes %v count %d", ks, ps, aws.ToInt32(out.KeyCount))
		}
	})
	t.Run("list v2 start-after", func(t *testing.T) {
		out, err := s.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, StartAfter: aws.String("dir/c.txt")})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Contents) != 3 || aws.ToString(out.Contents[0].Key) != "dir/sub/d.txt" {
			t.Fatalf("after dir/c.txt: %d keys, first %s", len(out.Contents), aws.ToString(out.Contents[0].Key))
		}
	})
	t.Run("list v1 markers", func(t *testing.T) {
		var got []string
		marker := ""
		for range 10 {
			out, err := s.ListObjects(ctx, &s3.ListObjectsInput{Bucket: b, Delimiter: aws.String("/"), MaxKeys: aws.Int32(2), Marker: aws.String(marker)})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range out.Contents {
				got = append(got, aws.ToString(o.Key))
			}
			for _, p := range out.CommonPrefixes {
				got = append(got, aws.ToString(p.Prefix))
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			marker = aws.ToString(out.NextMarker)
		}
		want := []string{"a.txt", "dir/", "e.txt", "z~ü.txt"}
		if !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
	t.Run("range", func(t *testing.T) {
		out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("a.txt"), Range: aws.String("bytes=2-5")})
		if got := readAll(t, out, err); got != "2345" || aws.ToString(out.ContentRange) != "bytes 2-5/16" {
			t.Fatalf("got %q, Content-Range %s", got, aws.ToString(out.ContentRange))
		}
		_, err = s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("a.txt"), Range: aws.String("bytes=100-")})
		if code(err) != "InvalidRange" {
			t.Fatalf("range past the end: %v", err)
		}
	})
	t.Run("conditionals", func(t *testing.T) {
		head, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("a.txt")})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToInt64(head.ContentLength) != 16 {
			t.Fatalf("head: length %d", aws.ToInt64(head.ContentLength))
		}
		_, err = s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("a.txt"), IfNoneMatch: head.ETag})
		if code(err) != "NotModified" {
			t.Fatalf("if-none-match of the current ETag: %v", err)
		}
		_, err = s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("a.txt"), IfMatch: aws.String(`"1"`)})
		if code(err) != "PreconditionFailed" {
			t.Fatalf("if-match of another ETag: %v", err)
		}
		out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("a.txt"), IfMatch: head.ETag})
		if got := readAll(t, out, err); got != "0123456789-a.txt" {
			t.Fatalf("if-match of the current ETag: %q", got)
		}
		_, err = s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("a.txt"), IfNoneMatch: aws.String("*"), Body: strings.NewReader("x")})
		if code(err) != "PreconditionFailed" {
			t.Fatalf("create-only put over an object: %v", err)
		}
	})
	t.Run("copy", func(t *testing.T) {
		if _, err := s.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy/a.txt"), CopySource: aws.String("photos/a.txt")}); err != nil {
			t.Fatal(err)
		}
		out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("copy/a.txt")})
		if got := readAll(t, out, err); got != "0123456789-a.txt" {
			t.Fatalf("copy: %q", got)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, k := range []string{"a//b", "x/../y", `back\slash`, ".s3bucket", "dir/.s3folder"} {
			_, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String(k), Body: strings.NewReader("x")})
			if code(err) != "InvalidObjectName" {
				t.Errorf("put %q: %v, want InvalidObjectName", k, err)
			}
		}
		_, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("missing")})
		if code(err) != "NoSuchKey" {
			t.Errorf("missing key: %v", err)
		}
		_, err = s.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("shared"), Key: aws.String("k")}) // readable, never created
		if code(err) != "NoSuchBucket" {
			t.Errorf("missing bucket: %v", err)
		}
		_, err = s.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("other"), Key: aws.String("k"), Body: strings.NewReader("x")})
		if code(err) != "AccessDenied" {
			t.Errorf("bucket without a grant: %v", err)
		}
		_, err = s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("md5"), Body: strings.NewReader("x"), ContentMD5: aws.String("XrY7u+Ae7tCTyyK7j1rNww==")})
		if code(err) != "BadDigest" {
			t.Errorf("wrong Content-MD5: %v", err)
		}
		if _, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("md5")}); code(err) != "NotFound" {
			t.Errorf("an object refused for its digest is visible: %v", err)
		}
		bad := s3.New(s3.Options{BaseEndpoint: aws.String("http://" + c.Nodes[0].S3Addr()), Region: "us-east-1", UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(key.ID, "wrong"+key.Secret[5:], "")})
		if _, err := bad.ListBuckets(ctx, &s3.ListBucketsInput{}); code(err) != "SignatureDoesNotMatch" {
			t.Errorf("wrong secret: %v", err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		if _, err := s.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b}); code(err) != "BucketNotEmpty" {
			t.Fatalf("delete of a full bucket: %v", err)
		}
		var ids []types.ObjectIdentifier
		for _, k := range append(keys, "copy/a.txt", "never-there") {
			ids = append(ids, types.ObjectIdentifier{Key: aws.String(k)})
		}
		out, err := s.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &types.Delete{Objects: ids}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Deleted) != len(ids) || len(out.Errors) != 0 {
			t.Fatalf("deleted %d, errors %+v", len(out.Deleted), out.Errors)
		}
		if _, err := s.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("never-there")}); err != nil {
			t.Fatalf("delete of a missing key: %v", err)
		}
		list, err := s.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b})
		if err != nil || len(list.Contents) != 0 {
			t.Fatalf("after deleting all: %v %d keys", err, len(list.Contents))
		}
		if _, err := s.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: b}); code(err) != "NotFound" {
			t.Fatalf("head after delete: %v", err)
		}
	})
}
