package s3_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestS3Admission: S3 requests take the admission slots of the native
// API, on the client port and on --s3 alike. A native upload whose body
// has not come yet holds a slot; with that one slot (and no waiting room)
// an S3 request is refused with 503 SlowDown; with one write slot, an S3
// write is refused and a read is served. Once the upload ends, S3 is
// served again.
func TestS3Admission(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(*node.Config)
		get, put string // the answer's code while the slot is held ("" for served)
	}{
		{"one slot", func(cfg *node.Config) { cfg.MaxInFlight, cfg.MaxQueue = 1, -1 }, "SlowDown", "SlowDown"},
		{"one write slot", func(cfg *node.Config) { cfg.MaxWriteInFlight, cfg.MaxWriteQueue = 1, -1 }, "", "SlowDown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, key := s3ClusterWith(t, 1, tc.setup)
			ports := map[string]*s3.Client{"--s3": s3Client(c, 0, key), "client port": s3Client(c, 0, key)}
			ports["client port"] = s3.New(s3.Options{BaseEndpoint: aws.String("http://" + c.HTTPAddr(0)), Region: "us-east-1", UsePathStyle: true,
				Credentials: credentials.NewStaticCredentialsProvider(key.ID, key.Secret, "")})
			b := aws.String("photos")
			if _, err := ports["--s3"].CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
				t.Fatal(err)
			}
			once := func(o *s3.Options) { o.RetryMaxAttempts = 1 } // see the refusal, not the retries
			get := func(s *s3.Client) string {
				out, err := s.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b}, once)
				if err == nil && out != nil {
					return ""
				}
				return code(err)
			}
			put := func(s *s3.Client) string {
				_, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("k"), Body: strings.NewReader("v")}, once)
				return code(err)
			}

			// the upload first, alone: had an S3 request held the one slot
			// when it came, it would be refused, and net/http would wait
			// for its body before answering
			body, done := holdUpload(t, ctx, c)
			testcluster.WaitFor(t, 20*time.Second, "the native upload to hold its slots", func() bool {
				return writesInFlight(t, ctx, c) == 1
			})
			for name, s := range ports {
				if got := get(s); got != tc.get {
					t.Errorf("S3 read on %s while the slot is held: %q, want %q", name, got, tc.get)
				}
				if got := put(s); got != tc.put {
					t.Errorf("S3 write on %s while the slot is held: %q, want %q", name, got, tc.put)
				}
			}
			_, err := ports["client port"].PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("k"), Body: strings.NewReader("v")}, once)
			var ae smithy.APIError
			if !errors.As(err, &ae) || !strings.Contains(ae.ErrorMessage(), "at capacity") {
				t.Errorf("the refusal: %v, want the limiter's message", err)
			}

			body.Close()
			if code := <-done; code/100 != 2 {
				t.Fatalf("the native upload: %d", code)
			}
			for name, s := range ports {
				if got := put(s); got != "" {
					t.Errorf("S3 write on %s once the slot is free: %q", name, got)
				}
			}
		})
	}
}

// writesInFlight reads the node's mure_write_admission_in_flight (a write
// holds a slot of both limiters).
func writesInFlight(t *testing.T, ctx context.Context, c *testcluster.Cluster) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.HTTPAddr(0)+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+c.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "mure_write_admission_in_flight "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatalf("no mure_write_admission_in_flight in /metrics")
	return 0
}

// holdUpload starts a native upload whose body comes only when the
// returned writer is closed; done gives its answer's status.
func holdUpload(t *testing.T, ctx context.Context, c *testcluster.Cluster) (io.WriteCloser, <-chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+c.HTTPAddr(0)+"/files/photos/held", pr)
	req.Header.Set("Authorization", "Bearer "+c.Token())
	done := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	t.Cleanup(func() { pw.Close() })
	return pw, done
}
