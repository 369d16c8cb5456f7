package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// BenchmarkSmallObjects measures the S3 layer's cost: 4 KiB PUTs and GETs
// on one node through aws-sdk-go-v2 and through the native Go client, one
// request at a time (docs/benchmarks.md, "S3").
//
//	go test ./internal/files/s3 -run XX -bench SmallObjects -benchtime 2000x
func BenchmarkSmallObjects(b *testing.B) {
	c, key := s3Cluster(b, 1)
	ctx := context.Background()
	s := s3Client(c, 0, key)
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("photos")}); err != nil {
		b.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), 4096)
	native := c.Client(0)
	b.Run("put/s3", func(b *testing.B) {
		for i := range b.N {
			if _, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String(fmt.Sprintf("s3/%d", i%100)), Body: bytes.NewReader(body)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("put/native", func(b *testing.B) {
		for i := range b.N {
			if _, err := native.Put(ctx, fmt.Sprintf("photos/native/%d", i%100), bytes.NewReader(body), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get/s3", func(b *testing.B) {
		for i := range b.N {
			out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String(fmt.Sprintf("s3/%d", i%100))})
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, out.Body)
			out.Body.Close()
		}
	})
	b.Run("get/native", func(b *testing.B) {
		for i := range b.N {
			rd, err := native.Get(ctx, fmt.Sprintf("photos/native/%d", i%100), nil)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, rd)
			rd.Close()
		}
	})
}

// BenchmarkFrontDoor measures S3 through the front door (proxy mode):
// 4 KiB PUTs and GETs by eight concurrent aws-sdk-go-v2 clients, over a
// cluster of one node and of three (docs/benchmarks.md, "S3").
//
//	go test ./internal/files/s3 -run XX -bench FrontDoor -benchtime 2000x
func BenchmarkFrontDoor(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			s := frontS3(b, n)
			ctx := context.Background()
			body := bytes.Repeat([]byte("x"), 4096)
			var seq atomic.Int64
			b.Run("put", func(b *testing.B) {
				b.SetParallelism(4) // 8 clients on 2 cores
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						k := fmt.Sprintf("bench/%d", seq.Add(1)%200)
						if _, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String(k), Body: bytes.NewReader(body)}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
			b.Run("get", func(b *testing.B) {
				b.SetParallelism(4)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						k := fmt.Sprintf("bench/%d", seq.Add(1)%200)
						out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String(k)})
						if err != nil {
							b.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, out.Body)
						out.Body.Close()
					}
				})
			})
		})
	}
}

// BenchmarkMultipartComplete measures what completing a multipart upload
// costs: the node streams the parts into one new file, one more write of
// the object's bytes (docs/access.md, docs/benchmarks.md "S3"). Each op,
// on one node through aws-sdk-go-v2, puts a 64 MiB object with PutObject
// (timed: writing the bytes once), uploads the same bytes as 8 parts of 8
// MiB (untimed) and completes the upload (timed); the two times alternate
// within the run, so a loaded machine weighs on both alike. It reports
// each one's mean and their ratio.
//
//	go test ./internal/files/s3 -run XX -bench MultipartComplete -benchtime 5x
func BenchmarkMultipartComplete(b *testing.B) {
	c, key := s3Cluster(b, 1)
	ctx := context.Background()
	s := s3Client(c, 0, key)
	bk := aws.String("photos")
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bk}); err != nil {
		b.Fatal(err)
	}
	const size, partSize = 64 << 20, 8 << 20
	body := make([]byte, size)
	_, _ = rand.Read(body)
	var put, complete time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: bk, Key: aws.String("single"), Body: bytes.NewReader(body)}); err != nil {
			b.Fatal(err)
		}
		put += time.Since(t0)
		k := aws.String("multipart")
		cu, err := s.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bk, Key: k})
		if err != nil {
			b.Fatal(err)
		}
		var parts []types.CompletedPart
		for n, off := int32(1), 0; off < size; n, off = n+1, off+partSize {
			up, err := s.UploadPart(ctx, &s3.UploadPartInput{Bucket: bk, Key: k, UploadId: cu.UploadId, PartNumber: aws.Int32(n), Body: bytes.NewReader(body[off : off+partSize])})
			if err != nil {
				b.Fatal(err)
			}
			parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(n), ETag: up.ETag})
		}
		t0 = time.Now()
		if _, err := s.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bk, Key: k, UploadId: cu.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
			b.Fatal(err)
		}
		complete += time.Since(t0)
	}
	b.ReportMetric(float64(put.Milliseconds())/float64(b.N), "put-ms/op")
	b.ReportMetric(float64(complete.Milliseconds())/float64(b.N), "complete-ms/op")
	b.ReportMetric(float64(complete)/float64(put), "complete/put")
}
