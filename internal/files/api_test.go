package files

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// outsider returns a node that holds neither a valid copy of path nor its
// write right.
func (c *fakeCluster) outsider(t *testing.T, path string) string {
	t.Helper()
	f := c.fsms[c.ids[0]].File(path)
	for _, id := range c.ids {
		if f == nil || (!f.IsValidOn(id) && f.Holder != id) {
			return id
		}
	}
	t.Fatalf("every node holds %s: %+v", path, f)
	return ""
}

// countingReader records whether its body was read.
type countingReader struct {
	r    io.Reader
	read int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += n
	return n, err
}

func TestPutOpenErrors(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster(t, "a", "b", "c")
	a := c.svcs["a"]
	v1, err := c.put("a", "f", "one", PutOptions{})
	if err != nil || !v1.Created || v1.Size != 3 {
		t.Fatalf("first write: %+v, %v", v1, err)
	}
	for _, tc := range []struct {
		name string
		do   func() error
		want error
	}{
		{"open missing", func() error { _, _, err := c.read("a", "nope", OpenOptions{}); return err }, ErrNotFound},
		{"open bad path", func() error { _, _, err := c.read("a", "a//b", OpenOptions{}); return err }, ErrBadPath},
		{"stat missing", func() error { _, err := a.Stat(ctx, "nope", OpenOptions{}); return err }, ErrNotFound},
		{"put bad path", func() error { _, err := c.put("a", "/abs", "x", PutOptions{}); return err }, ErrBadPath},
		{"put bad key", func() error { _, err := c.put("a", "f", "x", PutOptions{IdempotencyKey: "has space"}); return err }, ErrBadRequest},
		{"create existing", func() error {
			_, err := c.put("a", "f", "x", PutOptions{Cond: Cond{IfNoneMatch: true}})
			return err
		}, ErrPrecondition},
		{"if-match old version", func() error {
			_, err := c.put("a", "f", "x", PutOptions{Cond: Cond{IfMatch: v1.Version + 100}})
			return err
		}, ErrPrecondition},
		{"announced too large", func() error { _, err := c.put("a", "f", "x", PutOptions{Size: 1 << 20}); return err }, ErrTooLarge},
		{"streamed too large", func() error {
			_, err := a.Put(ctx, "f", strings.NewReader(strings.Repeat("x", 2<<10)), PutOptions{Size: -1})
			return err
		}, ErrTooLarge},
		{"truncated", func() error {
			_, err := a.Put(ctx, "f", strings.NewReader("short"), PutOptions{Size: 10})
			return err
		}, ErrTruncated},
		{"delete missing", func() error { return a.Delete(ctx, "nope", DeleteOptions{}) }, ErrNotFound},
		{"delete if-match old", func() error { return a.Delete(ctx, "f", DeleteOptions{Cond: Cond{IfMatch: 1}}) }, ErrPrecondition},
		{"list bad limit", func() error { _, err := a.List(ctx, ListOptions{Limit: 20000}); return err }, ErrBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if err.Error() == "" || strings.HasPrefix(err.Error(), "files:") {
				t.Fatalf("error %q has no message for a person", err)
			}
		})
	}
	// Nothing above changed the file.
	if got, _, err := c.read("a", "f", OpenOptions{}); err != nil || got != "one" {
		t.Fatalf("after the refusals: %q, %v", got, err)
	}
	var tl *TooLargeError
	if _, err := c.put("a", "f", "x", PutOptions{Size: 1 << 20}); !errors.As(err, &tl) || tl.Size != 1<<20 || tl.Limit != 1<<10 {
		t.Fatalf("too large: %#v", err)
	}
}

func TestRangeAndStat(t *testing.T) {
	c := newFakeCluster(t, "a")
	if _, err := c.put("a", "r", "0123456789", PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		off, n int64
		want   string
	}{{0, 0, "0123456789"}, {3, 4, "3456"}, {8, 0, "89"}, {8, 100, "89"}, {20, 0, ""}} {
		got, rd, err := c.read("a", "r", OpenOptions{Offset: tc.off, Length: tc.n})
		if err != nil || got != tc.want || rd.Length() != int64(len(tc.want)) {
			t.Errorf("range %d+%d: %q (length %d), %v; want %q", tc.off, tc.n, got, rd.Length(), err, tc.want)
		}
	}
	info, err := c.svcs["a"].Stat(context.Background(), "r", OpenOptions{})
	if err != nil || info.Size != 10 || info.ETag == "" {
		t.Fatalf("stat: %+v, %v", info, err)
	}
}

func TestIdempotentRetry(t *testing.T) {
	c := newFakeCluster(t, "a", "b")
	first, err := c.put("a", "k", "v1", PutOptions{IdempotencyKey: "key-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.put("a", "k", "v2", PutOptions{}); err != nil {
		t.Fatal(err)
	}
	body := &countingReader{r: strings.NewReader("v1")}
	again, err := c.svcs["a"].Put(context.Background(), "k", body, PutOptions{Size: 2, IdempotencyKey: "key-1"})
	if err != nil || again.Version != first.Version || body.read != 0 {
		t.Fatalf("retry: %+v (read %d bytes), %v; want version %d, body unread", again, body.read, err, first.Version)
	}
	if got, _, _ := c.read("a", "k", OpenOptions{}); got != "v2" {
		t.Fatalf("the retry wrote again: %q", got)
	}
	// A retried delete is recognised too.
	for i := range 2 {
		if err := c.svcs["a"].Delete(context.Background(), "k", DeleteOptions{IdempotencyKey: "del-1"}); err != nil {
			t.Fatalf("delete attempt %d: %v", i, err)
		}
	}
}

// TestForwarding covers what a node does when another must serve: report
// where to go, or, when asked, forward (within the hop limit).
func TestForwarding(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, c *fakeCluster, out string)
	}{
		{"write held elsewhere: redirect, body unread", func(t *testing.T, c *fakeCluster, out string) {
			body := &countingReader{r: strings.NewReader("v2")}
			_, err := c.svcs[out].Put(ctx, "f", body, PutOptions{Size: 2})
			var held *HeldElsewhereError
			if !errors.As(err, &held) || held.Node != "a" || held.Addr != "a:http" || body.read != 0 {
				t.Fatalf("got %v (read %d bytes), want held by a at a:http, body unread", err, body.read)
			}
		}},
		{"write forwarded to the holder", func(t *testing.T, c *fakeCluster, out string) {
			info, err := c.put(out, "f", "v2", PutOptions{Forwarding: Forwarding{Forward: true}})
			if err != nil || c.forwarded("write") != 1 {
				t.Fatalf("forwarded write: %+v, %v, %d forwards", info, err, c.forwarded("write"))
			}
			if f := c.fsms[out].File("f"); f.Holder != "a" || f.Version != info.Version {
				t.Fatalf("record after: %+v, want held by a at %d", f, info.Version)
			}
		}},
		{"write: dead holder, right taken here", func(t *testing.T, c *fakeCluster, out string) {
			c.dead["a"] = true
			_, err := c.put(out, "f", "v2", PutOptions{Forwarding: Forwarding{Forward: true}})
			if err != nil || c.forwarded("write") != 0 || c.fsms[out].File("f").Holder != out {
				t.Fatalf("%v, %d forwards, holder %s", err, c.forwarded("write"), c.fsms[out].File("f").Holder)
			}
		}},
		{"write at the hop limit", func(t *testing.T, c *fakeCluster, out string) {
			_, err := c.put(out, "f", "v2", PutOptions{Forwarding: Forwarding{Forward: true, Hops: MaxForwardHops}})
			if !errors.Is(err, ErrHeldElsewhere) || c.forwarded("write") != 0 {
				t.Fatalf("got %v after %d forwards, want held elsewhere, no forward", err, c.forwarded("write"))
			}
		}},
		{"holder dies before applying", func(t *testing.T, c *fakeCluster, out string) {
			c.fail["a"] = "before"
			v := c.fsms["a"].File("f").Version
			_, err := c.put(out, "f", "v2", PutOptions{Forwarding: Forwarding{Forward: true}})
			if !errors.Is(err, ErrInterrupted) || !errors.Is(err, ErrUnavailable) || c.fsms["a"].File("f").Version != v {
				t.Fatalf("got %v, version %d→%d; want interrupted, nothing written", err, v, c.fsms["a"].File("f").Version)
			}
			if !strings.Contains(err.Error(), "Idempotency-Key") {
				t.Fatalf("message %q does not say how to retry", err)
			}
		}},
		{"holder dies after applying: outcome learnt", func(t *testing.T, c *fakeCluster, out string) {
			c.fail["a"] = "after"
			info, err := c.put(out, "f", "v2", PutOptions{Forwarding: Forwarding{Forward: true}})
			if err != nil || info.Version != c.fsms["a"].File("f").Version {
				t.Fatalf("got %+v, %v; want the applied version %d", info, err, c.fsms["a"].File("f").Version)
			}
		}},
		{"delete forwarded", func(t *testing.T, c *fakeCluster, out string) {
			err := c.svcs[out].Delete(ctx, "f", DeleteOptions{Forwarding: Forwarding{Forward: true}})
			if err != nil || c.forwarded("delete") != 1 || c.fsms["a"].File("f").Exists() {
				t.Fatalf("%v, %d forwards", err, c.forwarded("delete"))
			}
		}},
		{"read without a copy: redirect", func(t *testing.T, c *fakeCluster, out string) {
			_, _, err := c.read(out, "f", OpenOptions{})
			var held *HeldElsewhereError
			if !errors.As(err, &held) || !c.fsms["a"].File("f").IsValidOn(held.Node) {
				t.Fatalf("got %v, want a node with a valid copy", err)
			}
		}},
		{"read forwarded", func(t *testing.T, c *fakeCluster, out string) {
			got, rd, err := c.read(out, "f", OpenOptions{Forwarding: Forwarding{Forward: true}})
			if err != nil || got != "v1" || !rd.Forwarded() || c.forwarded("read") != 1 {
				t.Fatalf("got %q, %v (%d forwards)", got, err, c.forwarded("read"))
			}
		}},
		{"stat forwarded", func(t *testing.T, c *fakeCluster, out string) {
			c.lease[out] = false // the record here cannot be confirmed: ask a holder
			info, err := c.svcs[out].Stat(ctx, "f", OpenOptions{Forwarding: Forwarding{Forward: true}})
			if err != nil || info.Size != 2 || c.forwarded("read") != 1 {
				t.Fatalf("got %+v, %v (%d forwards)", info, err, c.forwarded("read"))
			}
		}},
		{"read range forwarded", func(t *testing.T, c *fakeCluster, out string) {
			got, _, err := c.read(out, "f", OpenOptions{Forwarding: Forwarding{Forward: true}, Offset: 1})
			if err != nil || got != "1" {
				t.Fatalf("got %q, %v", got, err)
			}
		}},
		{"read forwarded to dead nodes", func(t *testing.T, c *fakeCluster, out string) {
			for _, id := range c.ids {
				if id != out {
					c.dead[id] = true
				}
			}
			_, _, err := c.read(out, "f", OpenOptions{Forwarding: Forwarding{Forward: true}})
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("got %v, want unavailable", err)
			}
		}},
		{"read forwarded: an unreachable copy, then another", func(t *testing.T, c *fakeCluster, out string) {
			c.cut["a"] = true // the holder, tried first
			got, rd, err := c.read(out, "f", OpenOptions{Forwarding: Forwarding{Forward: true}})
			if err != nil || got != "v1" || rd.Node() == "a" {
				t.Fatalf("got %q, %v; want v1 from the other copy", got, err)
			}
		}},
		{"no lease", func(t *testing.T, c *fakeCluster, out string) {
			c.lease[out] = false
			_, _, err := c.read(out, "nope", OpenOptions{})
			if !errors.Is(err, ErrNoQuorum) || !errors.Is(err, ErrUnavailable) {
				t.Fatalf("got %v, want no quorum", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t, "a", "b", "c")
			if _, err := c.put("a", "f", "v1", PutOptions{}); err != nil {
				t.Fatal(err)
			}
			tc.run(t, c, c.outsider(t, "f"))
		})
	}
}

func TestCopyRename(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster(t, "a", "b", "c")
	src, err := c.put("a", "src", "data", PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := c.outsider(t, "src")
	fw := Forwarding{Forward: true}
	if _, err := c.svcs[out].Copy(ctx, "src", "dst", CopyOptions{SourceVersion: src.Version + 1}); !errors.Is(err, ErrPrecondition) && !errors.Is(err, ErrHeldElsewhere) {
		t.Fatalf("copy of another source version: %v", err)
	}
	if _, err := c.svcs[out].Copy(ctx, "src", "dst", CopyOptions{Forwarding: fw, SourceVersion: src.Version + 1}); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("copy of another source version: %v, want precondition", err)
	}
	info, err := c.svcs[out].Copy(ctx, "src", "dst", CopyOptions{Forwarding: fw, SourceVersion: src.Version, IdempotencyKey: "cp"})
	if err != nil || info.Size != 4 {
		t.Fatalf("copy: %+v, %v", info, err)
	}
	if got, _, err := c.read(out, "dst", OpenOptions{Forwarding: fw}); err != nil || got != "data" {
		t.Fatalf("dst after copy: %q, %v", got, err)
	}
	if again, err := c.svcs[out].Copy(ctx, "src", "dst", CopyOptions{Forwarding: fw, IdempotencyKey: "cp"}); err != nil || again.Version != info.Version {
		t.Fatalf("retried copy: %+v, %v; want version %d", again, err, info.Version)
	}
	if _, err := c.svcs["a"].Rename(ctx, "src", "moved", CopyOptions{Forwarding: fw}); err != nil {
		t.Fatalf("rename: %v", err)
	}
	if _, _, err := c.read("a", "src", OpenOptions{Forwarding: fw}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("source after rename: %v", err)
	}
	if got, _, err := c.read("a", "moved", OpenOptions{Forwarding: fw}); err != nil || got != "data" {
		t.Fatalf("renamed: %q, %v", got, err)
	}
	page, err := c.svcs["b"].List(ctx, ListOptions{})
	var names []string
	for _, f := range page.Files {
		names = append(names, f.Path)
	}
	if err != nil || !slices.Equal(names, []string{"dst", "moved"}) {
		t.Fatalf("listing: %v, %v", names, err)
	}
}
