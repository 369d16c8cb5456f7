package s3_test

import (
	"context"
	"crypto/md5"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// An object's metadata (content type, standard headers, x-amz-meta-*) is
// kept with it and answered by HEAD, GET and copies; its ETag is the MD5
// of its content, which conditions compare.
func TestS3Metadata(t *testing.T) {
	c, key := s3Cluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := s3Client(c, 0, key)
	b := aws.String("photos")
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	body := "hello, metadata"
	md5ETag := fmt.Sprintf(`"%x"`, md5.Sum([]byte(body)))
	meta := map[string]string{"colour": "blue", "mixed-case": "Value Kept"}
	expires := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	put, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("m.txt"), Body: strings.NewReader(body),
		ContentType: aws.String("text/plain; charset=utf-8"), Metadata: map[string]string{"colour": "blue", "Mixed-Case": "Value Kept"},
		CacheControl: aws.String("max-age=60"), ContentDisposition: aws.String(`attachment; filename="m.txt"`),
		ContentLanguage: aws.String("fr"), Expires: aws.Time(expires)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(put.ETag) != md5ETag {
		t.Fatalf("put ETag %s, want the MD5 %s", aws.ToString(put.ETag), md5ETag)
	}
	checkHead := func(t *testing.T, k, ctype string, want map[string]string) *s3.HeadObjectOutput {
		t.Helper()
		h, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String(k)})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(h.ContentType) != ctype || fmt.Sprint(h.Metadata) != fmt.Sprint(want) {
			t.Fatalf("head %s: type %q metadata %v; want %q %v", k, aws.ToString(h.ContentType), h.Metadata, ctype, want)
		}
		return h
	}
	t.Run("head and get answer it", func(t *testing.T) {
		h := checkHead(t, "m.txt", "text/plain; charset=utf-8", meta)
		if aws.ToString(h.ETag) != md5ETag || aws.ToString(h.CacheControl) != "max-age=60" || aws.ToString(h.ContentLanguage) != "fr" ||
			aws.ToString(h.ContentDisposition) != `attachment; filename="m.txt"` || h.ExpiresString == nil || !strings.Contains(*h.ExpiresString, "2030") {
			t.Fatalf("head: %+v", h)
		}
		out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("m.txt"), ResponseContentType: aws.String("application/x-override")})
		if got := readAll(t, out, err); got != body || aws.ToString(out.ContentType) != "application/x-override" || out.Metadata["colour"] != "blue" {
			t.Fatalf("get with response-content-type: %q type %q metadata %v", got, aws.ToString(out.ContentType), out.Metadata)
		}
	})
	t.Run("listings answer the MD5 ETag", func(t *testing.T) {
		l, err := s.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b})
		if err != nil || len(l.Contents) != 1 || aws.ToString(l.Contents[0].ETag) != md5ETag {
			t.Fatalf("%v %+v", err, l)
		}
	})
	t.Run("an object without a type", func(t *testing.T) {
		// aws-sdk-go-v2 sends application/octet-stream when given no type.
		if _, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("bare"), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
		checkHead(t, "bare", "application/octet-stream", map[string]string{})
		if _, err := c.Client(0).Put(ctx, "photos/native", strings.NewReader("x"), nil); err != nil {
			t.Fatal(err)
		}
		checkHead(t, "native", "binary/octet-stream", map[string]string{})
	})
	t.Run("copy keeps or replaces it", func(t *testing.T) {
		cp, err := s.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("kept"), CopySource: aws.String("photos/m.txt")})
		if err != nil || aws.ToString(cp.CopyObjectResult.ETag) != md5ETag {
			t.Fatalf("copy: %v %+v", err, cp)
		}
		checkHead(t, "kept", "text/plain; charset=utf-8", meta)
		_, err = s.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("replaced"), CopySource: aws.String("photos/m.txt"),
			MetadataDirective: types.MetadataDirectiveReplace, ContentType: aws.String("image/png"), Metadata: map[string]string{"n": "1"}})
		if err != nil {
			t.Fatal(err)
		}
		checkHead(t, "replaced", "image/png", map[string]string{"n": "1"})
		_, err = s.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("m.txt"), CopySource: aws.String("photos/m.txt")})
		if code(err) != "InvalidRequest" {
			t.Fatalf("copy onto itself without REPLACE: %v", err)
		}
		_, err = s.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("replaced"), CopySource: aws.String("photos/replaced"),
			MetadataDirective: types.MetadataDirectiveReplace, ContentType: aws.String("image/webp")})
		if err != nil {
			t.Fatalf("copy onto itself with REPLACE: %v", err)
		}
		checkHead(t, "replaced", "image/webp", map[string]string{})
	})
	t.Run("copy conditions", func(t *testing.T) {
		future, past := time.Now().Add(time.Hour), time.Now().Add(-time.Hour)
		cases := []struct {
			name string
			in   s3.CopyObjectInput
			want string
		}{
			{"if-match the MD5", s3.CopyObjectInput{CopySourceIfMatch: aws.String(md5ETag)}, ""},
			{"if-match another", s3.CopyObjectInput{CopySourceIfMatch: aws.String(`"0123"`)}, "PreconditionFailed"},
			{"if-none-match the MD5", s3.CopyObjectInput{CopySourceIfNoneMatch: aws.String(md5ETag)}, "PreconditionFailed"},
			{"if-none-match another", s3.CopyObjectInput{CopySourceIfNoneMatch: aws.String(`"0123"`)}, ""},
			{"if-modified-since the future", s3.CopyObjectInput{CopySourceIfModifiedSince: aws.Time(future)}, "PreconditionFailed"},
			{"if-unmodified-since the past", s3.CopyObjectInput{CopySourceIfUnmodifiedSince: aws.Time(past)}, "PreconditionFailed"},
			{"if-unmodified-since the future", s3.CopyObjectInput{CopySourceIfUnmodifiedSince: aws.Time(future)}, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				in := tc.in
				in.Bucket, in.Key, in.CopySource = b, aws.String("cond"), aws.String("photos/m.txt")
				if _, err := s.CopyObject(ctx, &in); code(err) != tc.want {
					t.Fatalf("got %v, want %q", err, tc.want)
				}
			})
		}
	})
	t.Run("put conditions compare the MD5", func(t *testing.T) {
		_, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("bare"), Body: strings.NewReader("y"), IfMatch: aws.String(md5ETag)})
		if code(err) != "PreconditionFailed" {
			t.Fatalf("if-match of another object's ETag: %v", err)
		}
		_, err = s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("bare"), Body: strings.NewReader("y"), IfMatch: aws.String(fmt.Sprintf(`"%x"`, md5.Sum([]byte("x"))))})
		if err != nil {
			t.Fatalf("if-match of the current ETag: %v", err)
		}
		_, err = s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("absent"), Body: strings.NewReader("y"), IfMatch: aws.String(md5ETag)})
		if code(err) != "NoSuchKey" {
			t.Fatalf("if-match of a missing object: %v", err)
		}
	})
	t.Run("too much metadata", func(t *testing.T) {
		_, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("big-meta"), Body: strings.NewReader("x"),
			Metadata: map[string]string{"a": strings.Repeat("v", 2100)}})
		if code(err) != "MetadataTooLarge" {
			t.Fatalf("%v", err)
		}
		if _, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("big-meta")}); code(err) != "NotFound" {
			t.Fatalf("refused object is visible: %v", err)
		}
	})
}
