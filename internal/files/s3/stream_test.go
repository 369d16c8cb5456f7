package s3_test

import (
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// patternReader yields n bytes of a cheap, non-repeating-looking pattern
// without holding them.
type patternReader struct{ n, off int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.n-p.off)]
	for i := range b {
		x := uint64(p.off + int64(i))
		b[i] = byte(x ^ x>>8 ^ x>>16*7)
	}
	p.off += int64(len(b))
	return len(b), nil
}

// heapPeak samples the heap in use until stop is called and returns its
// largest value.
func heapPeak() (stop func() uint64) {
	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			mu.Lock()
			peak = max(peak, m.HeapInuse)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// A large object streams through the S3 face both ways: the heap of the
// process (node and client) grows by far less than the object's size, and
// the object's ETag is the MD5 of what was sent. (A 5 GiB object is
// scripts/bench/s3-large.sh's: too slow for every run.)
func TestS3LargeObjectStreams(t *testing.T) {
	const size = 96 << 20
	c, key := s3Cluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := s3Client(c, 0, key).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("photos")}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := heapPeak()
	sum := md5.New()
	body := io.TeeReader(&patternReader{n: size}, sum)
	url := "http://" + c.Nodes[0].S3Addr() + "/photos/large.bin"
	status, answer := do(t, signedRequest(t, http.MethodPut, url, body, size, key.ID, key.Secret))
	if status != 200 {
		t.Fatalf("PUT of %d bytes: %d %s", size, status, answer)
	}
	out, err := s3Client(c, 0, key).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("large.bin")})
	if err != nil {
		t.Fatal(err)
	}
	back := md5.New()
	n, err := io.Copy(back, out.Body)
	out.Body.Close()
	peak := stop()
	want := fmt.Sprintf(`"%x"`, sum.Sum(nil))
	if err != nil || n != size || aws.ToString(out.ETag) != want || fmt.Sprintf(`"%x"`, back.Sum(nil)) != want {
		t.Fatalf("GET: %d bytes (%v), ETag %s, MD5 read %x; want %d bytes, %s", n, err, aws.ToString(out.ETag), back.Sum(nil), size, want)
	}
	if grew := int64(peak) - int64(before.HeapInuse); grew > size/3 {
		t.Fatalf("the heap grew by %d MiB during a %d MiB PUT and GET: the body is held, not streamed", grew>>20, size>>20)
	} else {
		t.Logf("heap in use: %d MiB before, peak %d MiB", before.HeapInuse>>20, peak>>20)
	}
}
