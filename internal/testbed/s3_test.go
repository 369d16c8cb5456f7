package testbed

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sys/unix"

	"github.com/mure-dev/mure/client"
)

// TestS3SingleAddress: S3 through the front door in single-address mode.
// Three nodes with authentication on own one address on a hub; an access
// key is made as `mure s3 key create` makes one; aws-sdk-go-v2, its
// connections made inside a client host, puts and gets objects and a
// multipart upload through the cluster address, a new connection for each
// request, which round robin spreads over the nodes (the nodes' injected
// SYN counts show it); every object reads back whole.
func TestS3SingleAddress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tb, cip := upSingleWith(t, ctx, "mtb3-", "10.77.188.0/24", 1, "kernel", func(cfg *Config) {
		cfg.Auth = true
		cfg.NodeArgs = append(cfg.NodeArgs, "--s3", ":9000")
	})
	defer tb.Down(context.Background())

	// alice may write the bucket photos; her key, once every node has it
	s1 := tb.Servers()[0]
	admin := client.New([]string{s1.HTTP()}, client.WithToken(tb.AdminToken()))
	grants := []string{"rw:photos/"}
	if _, err := admin.AddUser(ctx, client.UserChange{Name: "alice", Grants: &grants}); err != nil {
		t.Fatal(err)
	}
	key, err := admin.CreateAccessKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	creds := credentials.NewStaticCredentialsProvider(key.ID, key.Secret, "")
	for _, h := range tb.Servers() {
		direct := s3.New(s3.Options{BaseEndpoint: aws.String("http://" + h.Addr + ":9000"), Region: "us-east-1", UsePathStyle: true, Credentials: creds})
		waitFor(t, "the key known to "+h.Name, func() bool {
			_, err := direct.ListBuckets(ctx, &s3.ListBucketsInput{})
			return err == nil
		})
	}

	// the client host's S3 client: a new connection, from inside the
	// host, for every request
	c := tb.Clients()[0]
	tr := &http.Transport{DialContext: dialFrom(c.NS), DisableKeepAlives: true}
	s := s3.New(s3.Options{BaseEndpoint: aws.String("http://" + cip + ":8080"), Region: "us-east-1", UsePathStyle: true, Credentials: creds,
		HTTPClient: &http.Client{Transport: tr, Timeout: 30 * time.Second}})
	before := injectedPerNode(ctx, t, tb)
	b := aws.String("photos")
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatalf("create a bucket through %s: %v", cip, err)
	}
	for i := range 6 {
		k, body := aws.String(fmt.Sprintf("single/%d", i)), fmt.Sprintf("object %d through one address", i)
		if _, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader(body)}); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		if got := getObject(t, ctx, s, b, k); got != body {
			t.Fatalf("get %d: %q, want %q", i, got, body)
		}
	}
	// a multipart upload whose parts may land on different nodes
	big := make([]byte, 11<<20)
	_, _ = rand.Read(big)
	k := aws.String("single/big")
	cu, err := s.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for n, off := int32(1), 0; off < len(big); n, off = n+1, off+5<<20 {
		up, err := s.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: cu.UploadId, PartNumber: aws.Int32(n), Body: bytes.NewReader(big[off:min(off+5<<20, len(big))])})
		if err != nil {
			t.Fatalf("part %d: %v", n, err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(n), ETag: up.ETag})
	}
	if _, err := s.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: cu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	if got := getObject(t, ctx, s, b, k); got != string(big) {
		t.Fatalf("the multipart object reads back %d bytes, not the %d put", len(got), len(big))
	}

	after := injectedPerNode(ctx, t, tb)
	served := 0
	for name, n := range after {
		if n > before[name] {
			served++
		}
	}
	if served < 2 {
		t.Errorf("SYNs injected per node before %v, after %v: the requests' connections did not spread over the nodes", before, after)
	}
	t.Logf("S3 through %s:8080 (single address, 3 nodes): bucket, 6 objects, an 11 MiB multipart upload; SYNs injected per node before %v, after %v", cip, before, after)
}

// getObject reads an object whole.
func getObject(t *testing.T, ctx context.Context, s *s3.Client, b, k *string) string {
	t.Helper()
	out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k})
	if err != nil {
		t.Fatalf("get %s: %v", aws.ToString(k), err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("get %s: %v", aws.ToString(k), err)
	}
	return string(data)
}

// injectedPerNode reads the SYNs each node has injected.
func injectedPerNode(ctx context.Context, t *testing.T, tb *Testbed) map[string]uint64 {
	t.Helper()
	n := map[string]uint64{}
	for _, h := range tb.Servers() {
		st, err := singleStatus(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		n[h.Name] = st.Injected
	}
	return n
}

// dialFrom dials from inside network namespace ns: the connections leave
// from that host, as its own programs' would.
func dialFrom(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type dialed struct {
			c   net.Conn
			err error
		}
		done := make(chan dialed, 1)
		go func() {
			// never unlocked: the thread, left in ns, ends with the goroutine
			runtime.LockOSThread()
			f, err := os.Open("/run/netns/" + ns)
			if err != nil {
				done <- dialed{err: err}
				return
			}
			defer f.Close()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				done <- dialed{err: err}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			done <- dialed{c, err}
		}()
		r := <-done
		return r.c, r.err
	}
}
