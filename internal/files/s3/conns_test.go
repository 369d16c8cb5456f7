package s3_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestS3MaxConns: the --s3 port holds at most --max-conns connections,
// as the client ports do. Two idle connections take a limit of two; an S3
// client's next request is refused at once with 503 SlowDown in S3's XML,
// naming the limit; once one idle connection closes, the client is served.
func TestS3MaxConns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, key := s3ClusterWith(t, 1, func(cfg *node.Config) { cfg.MaxConns = 2 })
	addr := c.Nodes[0].S3Addr()
	var idle []net.Conn
	for range 2 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		idle = append(idle, conn)
	}
	once := func(o *s3.Options) { o.RetryMaxAttempts = 1 } // see the refusal, not the retries
	var last error
	// The listener counts a connection once it has accepted it: poll.
	testcluster.WaitFor(t, 10*time.Second, "an S3 request over the connection limit to be refused", func() bool {
		_, last = s3Client(c, 0, key).ListBuckets(ctx, &s3.ListBucketsInput{}, once)
		return code(last) == "SlowDown"
	})
	var ae smithy.APIError
	if !errors.As(last, &ae) || !strings.Contains(ae.ErrorMessage(), "2 connections open") {
		t.Fatalf("the refusal: %v, want SlowDown naming the limit", last)
	}
	idle[0].Close()
	testcluster.WaitFor(t, 10*time.Second, "S3 to be served once a connection closed", func() bool {
		_, last = s3Client(c, 0, key).ListBuckets(ctx, &s3.ListBucketsInput{}, once)
		return last == nil
	})
}
