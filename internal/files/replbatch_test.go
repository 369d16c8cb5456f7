package files

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// kindCounts counts the entries of each kind applied since entry from.
func (c *fakeCluster) kindCounts(from int) map[string]int {
	n := map[string]int{}
	for _, k := range c.kinds(from) {
		n[k]++
	}
	return n
}

func (c *fakeCluster) entries() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.applied)
}

// Rights that fall due together are released by one Releases entry, and
// the copies fetched together reported by one Replicas entry (core v5);
// with a voter older than v5, one Release and one Replica per file, with
// the same outcome; a stale report is refused alone.
func TestBatchedReleasesAndReplicas(t *testing.T) {
	for _, tc := range []struct {
		name string
		noV5 bool
		want map[string]int
	}{
		{"core v5", false, map[string]int{"releases": 1, "replicas": 1}},
		{"a voter older than v5", true, map[string]int{"release": 3, "replica": 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t, "a", "b")
			c.apply(meta.Command{Kind: meta.KindSetConfig, Key: meta.CfgDurability, Value: "local"})
			c.noV5 = tc.noV5
			a, b := c.svcs["a"], c.svcs["b"]
			paths := []string{"x", "y", "z"}
			var items []meta.Item
			for _, p := range paths {
				if _, err := c.put("a", p, "content of "+p, PutOptions{}); err != nil {
					t.Fatal(err)
				}
				f := c.fsms["a"].File(p)
				items = append(items, meta.Item{Path: p, Grant: f.Grant})
			}
			from := c.entries()
			ctx := context.Background()
			if done := a.resumer.releaseAll(ctx, items); !slices.Equal(done, []bool{true, true, true}) {
				t.Fatalf("released %v", done)
			}
			var files []*meta.File
			for _, p := range paths {
				f := c.fsms["b"].File(p)
				if f.Holder != "" {
					t.Fatalf("%s still held by %s", p, f.Holder)
				}
				if err := b.fetchReplica(ctx, f, "a"); err != nil {
					t.Fatal(err)
				}
				files = append(files, f)
			}
			items = items[:0]
			for _, f := range files {
				items = append(items, meta.Item{Path: f.Path, Version: f.Version})
			}
			items = append(items, meta.Item{Path: files[0].Path, Version: files[0].Version + 1}) // stale: refused
			outs := b.reports.apply(ctx, items)
			for i, o := range outs {
				if o.err != nil || o.accepted != (i < len(files)) {
					t.Fatalf("report %d: accepted %v, %v; want accepted %v", i, o.accepted, o.err, i < len(files))
				}
			}
			for _, f := range files {
				if got := c.fsms["a"].File(f.Path).Valid; !slices.Equal(got, []string{"a", "b"}) {
					t.Fatalf("%s valid on %v, want [a b]", f.Path, got)
				}
			}
			if got := c.kindCounts(from); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("entries %v, want %v", got, tc.want)
			}
		})
	}
}

// Reports made while one is being applied queue and go in one entry.
func TestReplicaReportsQueue(t *testing.T) {
	c := newFakeCluster(t, "a", "b")
	c.apply(meta.Command{Kind: meta.KindSetConfig, Key: meta.CfgDurability, Value: "local"})
	var files []*meta.File
	for i := range 5 {
		p := fmt.Sprint("f", i)
		if _, err := c.put("a", p, "content", PutOptions{}); err != nil {
			t.Fatal(err)
		}
		f := c.fsms["a"].File(p)
		c.apply(meta.Command{Kind: meta.KindRelease, Path: p, Node: "a", Grant: f.Grant})
		files = append(files, c.fsms["b"].File(p))
	}
	b := c.svcs["b"]
	// A batch in flight: queue the others behind it before it ends.
	b.reports.mu.Lock()
	b.reports.sending = true
	b.reports.mu.Unlock()
	ctx := context.Background()
	errs := make(chan error, len(files))
	for _, f := range files {
		go func() {
			accepted, err := b.reportReplica(ctx, f)
			if err == nil && !accepted {
				err = fmt.Errorf("report of %s refused", f.Path)
			}
			errs <- err
		}()
	}
	queued := func() int {
		b.reports.mu.Lock()
		defer b.reports.mu.Unlock()
		return len(b.reports.q)
	}
	for deadline := time.Now().Add(5 * time.Second); queued() < len(files); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d reports queued after 5 s", queued(), len(files))
		}
	}
	from := c.entries()
	go b.reports.drain() // the batch in flight ends; its sender drains
	for range files {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := c.kindCounts(from); got["replicas"] != 1 || len(got) != 1 {
		t.Fatalf("entries %v, want one replicas", got)
	}
	for _, f := range files {
		if !c.fsms["b"].File(f.Path).IsValidOn("b") {
			t.Fatalf("%s not valid on b", f.Path)
		}
	}
}
