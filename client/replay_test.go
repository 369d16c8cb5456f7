package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// Go's transport replays a keyed DELETE when a reused connection fails; if
// the node is then gone, the final error is a dial error. The request was
// written (and may have been applied): the outcome must be reported
// unknown, not "never sent".
func TestReplayAfterWriteIsOutcomeUnknown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusNoContent) // leaves a keep-alive connection
			return
		}
		ln.Close() // the node dies after reading the request
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close()
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := New([]string{ln.Addr().String()}, WithAttempts(1))
	if err := cl.Delete(ctx, "first", nil); err != nil {
		t.Fatal(err)
	}
	err = cl.Delete(ctx, "second", nil)
	if err == nil || !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("delete cut after it was sent: %v, want an error wrapping ErrOutcomeUnknown", err)
	}
}
