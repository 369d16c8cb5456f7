package files

import (
	"context"
	"io"
	"testing"
	"time"
)

// slowReader delivers its parts with a pause before each, as a client
// on a slow link sends a large body.
type slowReader struct {
	parts []string
	pause time.Duration
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.pause)
	n := copy(p, r.parts[0])
	r.parts[0] = r.parts[0][n:]
	if r.parts[0] == "" {
		r.parts = r.parts[1:]
	}
	return n, nil
}

// WriteTimeout bounds the cluster's round trips of a write, not the time
// its body takes to arrive: a body slower than it is still committed, by
// the take and by the classic path.
func TestSlowBodyOutlastsWriteTimeout(t *testing.T) {
	for _, noTake := range []bool{false, true} {
		c := newFakeCluster(t, "a", "b")
		c.noTake = noTake
		for _, s := range c.svcs {
			s.cfg.WriteTimeout = 200 * time.Millisecond
		}
		body := &slowReader{parts: []string{"first half, ", "second half"}, pause: 300 * time.Millisecond}
		info, err := c.svcs["a"].Put(context.Background(), "slow", body, PutOptions{Size: 23})
		if err != nil {
			t.Fatalf("noTake %v: a body slower than WriteTimeout: %v", noTake, err)
		}
		if got, _, err := c.read("b", "slow", OpenOptions{Forwarding: Forwarding{Forward: true}}); err != nil || got != "first half, second half" || info.Size != 23 {
			t.Fatalf("read back: %q %v", got, err)
		}
	}
}
