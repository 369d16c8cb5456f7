package s3_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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
