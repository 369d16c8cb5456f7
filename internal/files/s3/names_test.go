package s3_test

import (
	"context"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// oddKeys are keys with characters that URLs, signatures and listings
// treat specially.
var oddKeys = []string{
	"odd/a b c.txt", "odd/plus+sign", "odd/100%", "odd/%41%2F", "odd/é ü ß", "odd/🙂", "odd/q?x=1&y=2",
	"odd/#hash", "odd/'single' \"double\"", "odd/semi;colon:equals=", "odd/~tilde!*()", "odd/..dots", "odd/<tag>",
}

// Keys with spaces, unicode, '%', '+' and the like round-trip through
// PUT, GET and listings (also URL-encoded, with owners); a key ending in
// '/' is an object of its own (a "folder" of consoles and s3fs), kept as
// S3 keeps it.
func TestS3KeyNames(t *testing.T) {
	c, key := s3Cluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := s3Client(c, 0, key)
	b := aws.String("photos")
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	put := func(t *testing.T, k, body, ctype string) {
		t.Helper()
		in := &s3.PutObjectInput{Bucket: b, Key: aws.String(k), Body: strings.NewReader(body)}
		if ctype != "" {
			in.ContentType = aws.String(ctype)
		}
		if _, err := s.PutObject(ctx, in); err != nil {
			t.Fatalf("put %q: %v", k, err)
		}
	}
	listAll := func(t *testing.T, prefix string, maxKeys int32) []string {
		t.Helper()
		var keys []string
		p := s3.NewListObjectsV2Paginator(s, &s3.ListObjectsV2Input{Bucket: b, Prefix: aws.String(prefix), MaxKeys: aws.Int32(maxKeys)})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range out.Contents {
				keys = append(keys, aws.ToString(o.Key))
			}
		}
		return keys
	}

	t.Run("odd names round-trip", func(t *testing.T) {
		for _, k := range oddKeys {
			put(t, k, "content of "+k, "")
			out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String(k)})
			if got := readAll(t, out, err); got != "content of "+k {
				t.Fatalf("get %q: %q", k, got)
			}
		}
		want := slices.Sorted(slices.Values(oddKeys))
		if got := listAll(t, "odd/", 5); !slices.Equal(got, want) {
			t.Fatalf("listing\n%q\nwant\n%q", got, want)
		}
	})
	t.Run("encoding-type=url and fetch-owner", func(t *testing.T) {
		u := "http://" + c.Nodes[0].S3Addr() + "/photos?list-type=2&encoding-type=url&fetch-owner=true&prefix=odd%2F"
		status, body := do(t, signedRequest(t, "GET", u, nil, 0, key.ID, key.Secret))
		if status != 200 || !strings.Contains(body, "<EncodingType>url</EncodingType>") || !strings.Contains(body, "<Owner><ID>") {
			t.Fatalf("%d %s", status, body)
		}
		for _, k := range oddKeys {
			enc := strings.ReplaceAll(url.QueryEscape(k), "+", "%20")
			if !strings.Contains(body, "<Key>"+enc+"</Key>") {
				t.Errorf("key %q not listed as %q", k, enc)
			}
		}
	})
	t.Run("folder keys", func(t *testing.T) {
		put(t, "dir/", "", "application/x-directory")
		put(t, "dir/-before", "x", "")
		put(t, "dir/z", "x", "")
		put(t, "dir/sub/", "", "application/x-directory")
		h, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("dir/")})
		if err != nil || aws.ToInt64(h.ContentLength) != 0 || aws.ToString(h.ContentType) != "application/x-directory" {
			t.Fatalf("head dir/: %v %+v", err, h)
		}
		// Every key once, whatever the page size (a folder key sorts as
		// its marker file, .s3folder, among its folder's names).
		want := []string{"dir/", "dir/-before", "dir/sub/", "dir/z"}
		for _, n := range []int32{1, 2, 1000} {
			got := listAll(t, "dir/", n)
			if !slices.Equal(slices.Sorted(slices.Values(got)), want) {
				t.Fatalf("pages of %d: %q, want %q in any order", n, got, want)
			}
		}
		var v1 []string
		marker := ""
		for range 10 {
			out, err := s.ListObjects(ctx, &s3.ListObjectsInput{Bucket: b, Prefix: aws.String("dir/"), MaxKeys: aws.Int32(1), Marker: aws.String(marker)})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range out.Contents {
				v1 = append(v1, aws.ToString(o.Key))
				marker = aws.ToString(o.Key)
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
		}
		if !slices.Equal(slices.Sorted(slices.Values(v1)), want) {
			t.Fatalf("V1 pages continued from the last key: %q", v1)
		}
		top, err := s.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, Delimiter: aws.String("/")})
		if err != nil || len(top.CommonPrefixes) != 2 || aws.ToString(top.CommonPrefixes[0].Prefix) != "dir/" {
			t.Fatalf("top level: %v %+v", err, top.CommonPrefixes)
		}
		in, err := s.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, Prefix: aws.String("dir/"), Delimiter: aws.String("/")})
		var keys []string
		for _, o := range in.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		if err != nil || !slices.Equal(slices.Sorted(slices.Values(keys)), []string{"dir/", "dir/-before", "dir/z"}) ||
			len(in.CommonPrefixes) != 1 || aws.ToString(in.CommonPrefixes[0].Prefix) != "dir/sub/" {
			t.Fatalf("inside dir/: %v keys %q prefixes %+v", err, keys, in.CommonPrefixes)
		}
		// The native API sees the folder's marker file.
		if _, err := c.Client(0).Stat(ctx, "photos/dir/.s3folder"); err != nil {
			t.Fatalf("native stat of the marker: %v", err)
		}
		if _, err := s.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("dir/")}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("dir/")}); code(err) != "NotFound" {
			t.Fatalf("head after delete: %v", err)
		}
		out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("dir/z")})
		if got := readAll(t, out, err); got != "x" {
			t.Fatalf("dir/z after deleting dir/: %q", got)
		}
	})
	t.Run("copy of a folder key", func(t *testing.T) {
		if _, err := s.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copied/"), CopySource: aws.String("photos/dir/sub/")}); err != nil {
			t.Fatal(err)
		}
		out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("copied/")})
		if err != nil || aws.ToString(out.ContentType) != "application/x-directory" {
			t.Fatalf("%v %+v", err, out)
		}
		io.Copy(io.Discard, out.Body)
		out.Body.Close()
	})
}
