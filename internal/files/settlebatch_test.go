package files

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// pendingFiles commits n files on a, left pending (no settle).
func pendingFiles(t *testing.T, c *fakeCluster, n int) []*meta.File {
	var files []*meta.File
	for i := range n {
		p := fmt.Sprint("p", i)
		c.mu.Lock()
		r := c.applyLocked(meta.Command{Kind: meta.KindCommit, Take: true, Path: p, Node: "a", BlobID: "b" + p, Sum: zeroSum})
		c.mu.Unlock()
		if r.Err != nil || !r.File.Pending {
			t.Fatalf("commit %s: %v, pending %v", p, r.Err, r.File != nil && r.File.Pending)
		}
		files = append(files, r.File)
	}
	return files
}

const zeroSum = "0000000000000000000000000000000000000000000000000000000000000000"

// The settles of barriers that end while one settle is being applied go
// in one Settles entry (core v6); with a voter older than v6, one Settle
// each. Every version ends settled either way.
func TestSettlesBatched(t *testing.T) {
	for _, tc := range []struct {
		name string
		noV6 bool
		want map[string]int
	}{
		{"core v6", false, map[string]int{"settles": 1}},
		{"a voter older than v6", true, map[string]int{"settle": 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t, "a", "b")
			c.noV6 = tc.noV6
			files := pendingFiles(t, c, 4)
			a := c.svcs["a"]
			b := a.settles
			b.mu.Lock()
			b.sending = true // a settle in flight: the others queue
			b.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			errs := make(chan error, len(files))
			for _, f := range files {
				go func() { errs <- a.settle(ctx, f) }()
			}
			queued := func() int {
				b.mu.Lock()
				defer b.mu.Unlock()
				return len(b.q)
			}
			for queued() < len(files) {
				if ctx.Err() != nil {
					t.Fatalf("%d of %d settles queued", queued(), len(files))
				}
				time.Sleep(time.Millisecond)
			}
			from := c.entries()
			go b.drain() // the settle in flight ends; its sender drains
			for range files {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			if got := c.kindCounts(from); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("entries %v, want %v", got, tc.want)
			}
			for _, f := range files {
				if c.fsms["b"].File(f.Path).Pending {
					t.Fatalf("%s still pending", f.Path)
				}
			}
		})
	}
}
