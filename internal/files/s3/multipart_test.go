package s3_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

func TestS3Multipart(t *testing.T) {
	c, key := s3Cluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, other := s3Client(c, 0, key), s3Client(c, 2, key)
	b := aws.String("photos")
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	p1, p2 := make([]byte, 5<<20), make([]byte, 1234)
	_, _ = rand.Read(p1)
	_, _ = rand.Read(p2)

	// upload starts an upload of k through node 0 and uploads the parts
	// through node 2, returning the upload ID and the parts' ETags.
	upload := func(t *testing.T, k string, parts ...[]byte) (string, []string) {
		t.Helper()
		cu, err := s.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String(k),
			ContentType: aws.String("video/mp4"), Metadata: map[string]string{"take": "2"}})
		if err != nil {
			t.Fatal(err)
		}
		var etags []string
		for i, p := range parts {
			up, err := other.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String(k), UploadId: cu.UploadId, PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
			if err != nil {
				t.Fatal(err)
			}
			sum := md5.Sum(p)
			if want := `"` + hex.EncodeToString(sum[:]) + `"`; aws.ToString(up.ETag) != want {
				t.Fatalf("part %d ETag %s, want its MD5 %s", i+1, aws.ToString(up.ETag), want)
			}
			etags = append(etags, aws.ToString(up.ETag))
		}
		return aws.ToString(cu.UploadId), etags
	}
	complete := func(k, id string, nums []int32, etags []string) (*s3.CompleteMultipartUploadOutput, error) {
		var cp []types.CompletedPart
		for i, n := range nums {
			cp = append(cp, types.CompletedPart{PartNumber: aws.Int32(n), ETag: aws.String(etags[i])})
		}
		return s.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String(k), UploadId: aws.String(id),
			MultipartUpload: &types.CompletedMultipartUpload{Parts: cp}})
	}

	t.Run("complete", func(t *testing.T) {
		id, etags := upload(t, "big.bin", p1, p2)
		lp, err := s.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: aws.String("big.bin"), UploadId: aws.String(id)})
		if err != nil || len(lp.Parts) != 2 || aws.ToInt64(lp.Parts[0].Size) != 5<<20 || aws.ToString(lp.Parts[1].ETag) != etags[1] {
			t.Fatalf("list parts: %v %+v", err, lp)
		}
		// In progress, the object is not visible and listings hide the upload.
		if _, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("big.bin")}); code(err) != "NotFound" {
			t.Fatalf("head during the upload: %v", err)
		}
		list, err := s.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b})
		if err != nil || len(list.Contents) != 0 {
			t.Fatalf("listing during the upload: %v %d keys", err, len(list.Contents))
		}
		ups, err := other.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b})
		if err != nil || len(ups.Uploads) != 1 || aws.ToString(ups.Uploads[0].Key) != "big.bin" || aws.ToString(ups.Uploads[0].UploadId) != id {
			t.Fatalf("uploads in progress: %v %+v", err, ups)
		}
		out, err := complete("big.bin", id, []int32{1, 2}, etags)
		if err != nil {
			t.Fatal(err)
		}
		s1, s2 := md5.Sum(p1), md5.Sum(p2)
		want := fmt.Sprintf(`"%x-2"`, md5.Sum(append(s1[:], s2[:]...)))
		if aws.ToString(out.ETag) != want {
			t.Fatalf("ETag %s, want md5 of the md5s %s", aws.ToString(out.ETag), want)
		}
		got, err := other.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("big.bin")})
		if data := readAll(t, got, err); data != string(p1)+string(p2) {
			t.Fatalf("assembled object: %d bytes, want %d", len(data), len(p1)+len(p2))
		}
		// The metadata given at creation, and the ETag of the completion.
		if aws.ToString(got.ETag) != want || aws.ToString(got.ContentType) != "video/mp4" || got.Metadata["take"] != "2" {
			t.Fatalf("assembled object: ETag %s type %s metadata %v", aws.ToString(got.ETag), aws.ToString(got.ContentType), got.Metadata)
		}
		if _, err := s.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: aws.String("big.bin"), UploadId: aws.String(id)}); code(err) != "NoSuchUpload" {
			t.Fatalf("the upload outlived its completion: %v", err)
		}
	})
	t.Run("upload part copy", func(t *testing.T) {
		// Two ranges of big.bin (made above) copied into a new object.
		cu, err := s.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("copied.bin")})
		if err != nil {
			t.Fatal(err)
		}
		var cp []types.CompletedPart
		for i, rg := range []string{fmt.Sprintf("bytes=0-%d", len(p1)-1), fmt.Sprintf("bytes=%d-%d", len(p1), len(p1)+len(p2)-1)} {
			out, err := other.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: aws.String("copied.bin"), UploadId: cu.UploadId,
				PartNumber: aws.Int32(int32(i + 1)), CopySource: aws.String("photos/big.bin"), CopySourceRange: aws.String(rg)})
			if err != nil {
				t.Fatalf("copy of %s: %v", rg, err)
			}
			cp = append(cp, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.CopyPartResult.ETag})
		}
		if _, err := s.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("copied.bin"), UploadId: cu.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: cp}}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("copied.bin")})
		if data := readAll(t, got, err); data != string(p1)+string(p2) {
			t.Fatalf("object made of copied parts: %d bytes, want %d", len(data), len(p1)+len(p2))
		}
		_, err = other.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: aws.String("copied.bin"), UploadId: cu.UploadId,
			PartNumber: aws.Int32(1), CopySource: aws.String("photos/big.bin"), CopySourceRange: aws.String("bytes=0-99")})
		if code(err) != "NoSuchUpload" {
			t.Fatalf("copy into a completed upload: %v", err)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		small := []byte("small part")
		id, etags := upload(t, "bad.bin", small, p2)
		cases := []struct {
			name  string
			nums  []int32
			etags []string
			want  string
		}{
			{"part too small", []int32{1, 2}, etags, "EntityTooSmall"},
			{"out of order", []int32{2, 1}, []string{etags[1], etags[0]}, "InvalidPartOrder"},
			{"wrong ETag", []int32{1}, []string{`"00000000000000000000000000000000"`}, "InvalidPart"},
			{"missing part", []int32{1, 3}, []string{etags[0], etags[1]}, "InvalidPart"},
		}
		for _, c := range cases {
			if _, err := complete("bad.bin", id, c.nums, c.etags); code(err) != c.want {
				t.Errorf("%s: %v, want %s", c.name, err, c.want)
			}
		}
		if _, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("bad.bin")}); code(err) != "NotFound" {
			t.Fatalf("a refused completion left an object: %v", err)
		}
		if _, err := s.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b}); code(err) != "BucketNotEmpty" {
			t.Fatalf("delete of a bucket with an upload in progress: %v", err)
		}
		if _, err := s.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: b, Key: aws.String("bad.bin"), UploadId: aws.String(id)}); err != nil {
			t.Fatal(err)
		}
		if _, err := complete("bad.bin", id, []int32{2}, etags[1:]); code(err) != "NoSuchUpload" {
			t.Fatalf("completion of an aborted upload: %v", err)
		}
	})
}

// An upload left unfinished longer than --s3-upload-ttl is removed with
// its parts by the leader; a fresh one is kept.
func TestS3AbandonedUploadsRemoved(t *testing.T) {
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.S3Addr = testcluster.FreeAddr(t)
		cfg.S3UploadTTL = 2 * time.Second
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	key, err := c.Client(0).CreateAccessKey(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	s := s3Client(c, 0, key)
	b := aws.String("photos")
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	cu, err := s.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("left.bin")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("left.bin"), UploadId: cu.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("part"))}); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 30*time.Second, "the abandoned upload removed", func() bool {
		_, err := s.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: aws.String("left.bin"), UploadId: cu.UploadId})
		return code(err) == "NoSuchUpload"
	})
	page, err := c.Client(0).List(ctx, client.ListOptions{Prefix: "photos/.s3uploads/"})
	if err != nil || len(page.Files) != 0 {
		t.Fatalf("files left of the removed upload: %v %+v", err, page)
	}
	// The bucket is empty again: it can be deleted.
	if _, err := s.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
}
