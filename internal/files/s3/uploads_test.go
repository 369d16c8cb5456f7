package s3_test

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestS3UploadListingsPage pages ListMultipartUploads and ListParts with
// aws-sdk-go-v2's paginators at several page sizes: every upload and
// part comes exactly once, in S3's order, and bad limits and markers are
// refused with InvalidArgument.
func TestS3UploadListingsPage(t *testing.T) {
	c, key := s3Cluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := s3Client(c, 0, key)
	b := aws.String("photos")
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	// Five uploads over three keys, two keys with two uploads each; the
	// one of "a" gets seven small parts (only complete checks sizes).
	var partsOf string
	for _, k := range []string{"c", "a", "b", "c", "a"} {
		cu, err := s.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String(k)})
		if err != nil {
			t.Fatal(err)
		}
		if partsOf == "" && k == "a" {
			partsOf = aws.ToString(cu.UploadId)
		}
	}
	for n := int32(1); n <= 7; n++ {
		if _, err := s.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("a"), UploadId: &partsOf, PartNumber: aws.Int32(n), Body: bytes.NewReader([]byte{byte(n)})}); err != nil {
			t.Fatal(err)
		}
	}

	all, err := s.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b})
	if err != nil || len(all.Uploads) != 5 || aws.ToBool(all.IsTruncated) {
		t.Fatalf("whole listing: %v %+v", err, all)
	}
	var want []string
	for i, u := range all.Uploads {
		want = append(want, aws.ToString(u.Key)+"/"+aws.ToString(u.UploadId))
		if i > 0 && want[i] <= want[i-1] {
			t.Fatalf("uploads not in key, upload ID order: %v", want)
		}
	}

	for _, size := range []int32{1, 2, 3, 5, 1000} {
		t.Run(fmt.Sprintf("uploads by %d", size), func(t *testing.T) {
			pg := s3.NewListMultipartUploadsPaginator(s, &s3.ListMultipartUploadsInput{Bucket: b, MaxUploads: aws.Int32(size)})
			var got []string
			for pages := 0; pg.HasMorePages(); pages++ {
				if pages > 10 {
					t.Fatal("the paginator does not stop")
				}
				out, err := pg.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Uploads) > int(size) || aws.ToInt32(out.MaxUploads) != size {
					t.Fatalf("page of %d uploads, MaxUploads %d, asked for %d", len(out.Uploads), aws.ToInt32(out.MaxUploads), size)
				}
				for _, u := range out.Uploads {
					got = append(got, aws.ToString(u.Key)+"/"+aws.ToString(u.UploadId))
				}
				if aws.ToBool(out.IsTruncated) && aws.ToString(out.NextKeyMarker)+"/"+aws.ToString(out.NextUploadIdMarker) != got[len(got)-1] {
					t.Fatalf("next markers %q %q, want the last upload %q", aws.ToString(out.NextKeyMarker), aws.ToString(out.NextUploadIdMarker), got[len(got)-1])
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("paged uploads %v, want %v", got, want)
			}
		})
	}
	t.Run("key marker alone skips the key", func(t *testing.T) {
		out, err := s.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b, KeyMarker: aws.String("a")})
		if err != nil || len(out.Uploads) != 3 || aws.ToString(out.Uploads[0].Key) != "b" {
			t.Fatalf("after key a: %v %+v", err, out)
		}
	})

	t.Run("delimiter", func(t *testing.T) { uploadsByDelimiter(t, ctx, s) })

	for _, size := range []int32{1, 3, 7, 1000} {
		t.Run(fmt.Sprintf("parts by %d", size), func(t *testing.T) {
			pg := s3.NewListPartsPaginator(s, &s3.ListPartsInput{Bucket: b, Key: aws.String("a"), UploadId: &partsOf, MaxParts: aws.Int32(size)})
			var got []int32
			for pages := 0; pg.HasMorePages(); pages++ {
				if pages > 10 {
					t.Fatal("the paginator does not stop")
				}
				out, err := pg.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Parts) > int(size) {
					t.Fatalf("page of %d parts, asked for %d", len(out.Parts), size)
				}
				for _, p := range out.Parts {
					got = append(got, aws.ToInt32(p.PartNumber))
				}
				if aws.ToBool(out.IsTruncated) && aws.ToString(out.NextPartNumberMarker) != fmt.Sprint(got[len(got)-1]) {
					t.Fatalf("NextPartNumberMarker %q, want %d", aws.ToString(out.NextPartNumberMarker), got[len(got)-1])
				}
			}
			if fmt.Sprint(got) != "[1 2 3 4 5 6 7]" {
				t.Fatalf("paged parts %v", got)
			}
		})
	}

	bad := []struct {
		name string
		call func() error
	}{
		{"negative max-uploads", func() error {
			_, err := s.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b, MaxUploads: aws.Int32(-1)})
			return err
		}},
		{"malformed upload-id-marker", func() error {
			_, err := s.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b, KeyMarker: aws.String("a"), UploadIdMarker: aws.String("../x")})
			return err
		}},
		{"negative max-parts", func() error {
			_, err := s.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: aws.String("a"), UploadId: &partsOf, MaxParts: aws.Int32(-3)})
			return err
		}},
		{"non-numeric part-number-marker", func() error {
			_, err := s.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: aws.String("a"), UploadId: &partsOf, PartNumberMarker: aws.String("two")})
			return err
		}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); code(err) != "InvalidArgument" {
				t.Fatalf("got %v, want InvalidArgument", err)
			}
		})
	}
}

// uploadsByDelimiter lists the uploads of a bucket of folders with a
// delimiter, as S3 does: the keys holding it after the prefix roll up
// into common prefixes, each one entry of a page in key order, and a page
// that ends on one continues after everything under it.
func uploadsByDelimiter(t *testing.T, ctx context.Context, s *s3.Client) {
	b := aws.String("photos") // holding uploads of a, b, c, c and a already
	for _, k := range []string{"a/1", "a/2", "a-b", "b/x/1", "b/x/2", "b/y", "c", "a/1"} {
		if _, err := s.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("tree/" + k)}); err != nil {
			t.Fatal(err)
		}
	}
	// list pages the listing by size and returns its entries: the key of
	// each upload, and the common prefixes.
	list := func(prefix string, size int32) []string {
		pg := s3.NewListMultipartUploadsPaginator(s, &s3.ListMultipartUploadsInput{Bucket: b, Delimiter: aws.String("/"), Prefix: aws.String(prefix), MaxUploads: aws.Int32(size)})
		var got []string
		for pages := 0; pg.HasMorePages(); pages++ {
			if pages > 10 {
				t.Fatal("the paginator does not stop")
			}
			out, err := pg.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(out.Uploads) + len(out.CommonPrefixes); n > int(size) || aws.ToString(out.Delimiter) != "/" {
				t.Fatalf("page of %d entries (asked for %d), delimiter %q", n, size, aws.ToString(out.Delimiter))
			}
			var page []string
			for _, u := range out.Uploads {
				page = append(page, aws.ToString(u.Key))
			}
			for _, p := range out.CommonPrefixes {
				page = append(page, aws.ToString(p.Prefix))
			}
			sort.Strings(page)
			if len(page) > 0 && aws.ToBool(out.IsTruncated) && aws.ToString(out.NextKeyMarker) != page[len(page)-1] {
				t.Fatalf("NextKeyMarker %q, want the page's last entry %q", aws.ToString(out.NextKeyMarker), page[len(page)-1])
			}
			got = append(got, page...)
		}
		return got
	}
	for _, tc := range []struct {
		prefix string
		want   string
	}{
		{"", "[a a b c c tree/]"},
		{"tree/", "[tree/a-b tree/a/ tree/b/ tree/c]"},
		{"tree/b/", "[tree/b/x/ tree/b/y]"},
		{"tree/a", "[tree/a-b tree/a/]"},
		{"tree/a/", "[tree/a/1 tree/a/1 tree/a/2]"},
		{"zzz", "[]"},
	} {
		for _, size := range []int32{1, 2, 1000} {
			if got := fmt.Sprint(list(tc.prefix, size)); got != tc.want {
				t.Errorf("prefix %q by %d: %s, want %s", tc.prefix, size, got, tc.want)
			}
		}
	}
}
