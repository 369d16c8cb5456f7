package files

import (
	"context"
	"errors"
	"testing"

	"github.com/mure-dev/mure/internal/meta"
)

// TestReadSentHereWithoutLease: two nodes hold valid copies and neither
// has a read lease (a leader election, a cluster without quorum). A read
// at one of them is sent to the other; there it must not be sent back
// (each node would name the other, and the client would bounce between
// them until the hop limit: 508). The node waits, bounded, for its lease:
// it answers from its copy if the lease comes back, else no_quorum (503,
// which the client retries).
func TestReadSentHereWithoutLease(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     OpenOptions
		renew bool   // the lease comes back while the read waits
		want  string // "served", "no quorum" or "sent to other holder"
	}{
		{"from a client: sent to the other holder", OpenOptions{}, false, "sent to other holder"},
		{"redirected here: waits, then no quorum", OpenOptions{Redirected: 1}, false, "no quorum"},
		{"redirected here: served once the lease is back", OpenOptions{Redirected: 1}, true, "served"},
		{"forwarded here: waits, then no quorum", OpenOptions{Forwarding: Forwarding{Forward: true, Hops: 1}}, false, "no quorum"},
		{"forwarded here: served once the lease is back", OpenOptions{Forwarding: Forwarding{Forward: true, Hops: 1}}, true, "served"},
		{"redirected here, stale accepted: served", OpenOptions{Redirected: 1, Stale: true}, false, "served"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t, "a", "b", "c")
			if _, err := c.put("a", "f", "v1", PutOptions{}); err != nil {
				t.Fatal(err)
			}
			f := c.fsms["a"].File("f")
			if len(f.Valid) != 2 {
				t.Fatalf("want two valid copies, got %v", f.Valid)
			}
			here, other := f.Valid[1], f.Valid[0]
			for _, id := range c.ids {
				c.lease[id] = false
			}
			c.renew[here] = tc.renew
			got, rd, err := c.read(here, "f", tc.o)
			var held *HeldElsewhereError
			switch tc.want {
			case "served":
				if err != nil || got != "v1" || rd.Node() != here {
					t.Fatalf("got %q, %v; want v1 from %s's own copy", got, err, here)
				}
			case "no quorum":
				if !errors.Is(err, ErrNoQuorum) || !errors.Is(err, ErrUnavailable) {
					t.Fatalf("got %q, %v; want no quorum, not a node to try next", got, err)
				}
			case "sent to other holder":
				if !errors.As(err, &held) || held.Node != other {
					t.Fatalf("got %q, %v; want a redirect to %s", got, err, other)
				}
			}
			if c.forwarded("read") != 0 {
				t.Fatalf("the read was forwarded on %d times", c.forwarded("read"))
			}
			sent := tc.o.Redirected > 0 || tc.o.Hops > 0
			if waited := c.awaited[here] > 0; waited != (sent && !tc.o.Stale) {
				t.Fatalf("%s waited for its lease: %v, want %v (only a read sent here waits; a client's goes to the other holder)", here, waited, !waited)
			}
		})
	}
}

// TestClientReadWithoutLeaseWaits: a client reads, at a node without a
// read lease, a path the node has no other node to send to (no file in
// its state, or its own copy the only one). Answering 503 at once would
// fail the read whenever a lease lapses for a moment (a slow renewal
// under load, an election: S3 clients met it as ServiceUnavailable in
// TestS3Multipart); the node waits, bounded, for its lease and judges the
// read again: 404 or the copy once the lease is back, else no quorum.
func TestClientReadWithoutLeaseWaits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		path  string
		only  bool // the file's only valid copy is on the node read
		renew bool // the lease comes back while the read waits
		want  string
	}{
		{"no such file, the lease comes back: not found", "nope", false, true, "not found"},
		{"no such file, no lease: no quorum", "nope", false, false, "no quorum"},
		{"the only copy, the lease comes back: served", "f", true, true, "served"},
		{"the only copy, no lease: no quorum", "f", true, false, "no quorum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t, "a", "b", "c")
			if tc.only {
				for k, v := range map[string]string{meta.CfgReplication: "1", meta.CfgDurability: "local"} {
					c.apply(meta.Command{Kind: meta.KindSetConfig, Key: k, Value: v})
				}
			}
			if _, err := c.put("a", "f", "v1", PutOptions{}); err != nil {
				t.Fatal(err)
			}
			here := "a"
			if f := c.fsms["a"].File("f"); !tc.only {
				here = f.Valid[1]
			} else if len(f.Valid) != 1 || f.Valid[0] != here {
				t.Fatalf("want the only copy on %s, got %v", here, f.Valid)
			}
			for _, id := range c.ids {
				c.lease[id] = false
			}
			c.renew[here] = tc.renew
			got, _, err := c.read(here, tc.path, OpenOptions{})
			switch tc.want {
			case "not found":
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("got %q, %v; want not found once the lease is back", got, err)
				}
			case "served":
				if err != nil || got != "v1" {
					t.Fatalf("got %q, %v; want v1 from %s's own copy once the lease is back", got, err, here)
				}
			case "no quorum":
				if !errors.Is(err, ErrNoQuorum) {
					t.Fatalf("got %q, %v; want no quorum", got, err)
				}
			}
			if c.awaited[here] != 1 {
				t.Fatalf("%s waited for its lease %d times, want once", here, c.awaited[here])
			}
		})
	}
}

// TestReadSentHereWhileFenced: a node fenced on a path (told of a write
// it has not applied yet) sends a client's read to the fence's hint; a
// read sent here by another node is not sent on (two nodes fenced on
// each other's writes would bounce it until the hop limit) but waits,
// bounded, to apply the fence's index: served here once applied, else
// ErrPending (503).
func TestReadSentHereWhileFenced(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     OpenOptions
		apply bool   // the fenced index is applied while the read waits
		want  string // "served", "pending" or "sent to hint"
	}{
		{"from a client: sent to the hint", OpenOptions{}, false, "sent to hint"},
		{"redirected here: waits, then pending", OpenOptions{Redirected: 1}, false, "pending"},
		{"redirected here: served once applied", OpenOptions{Redirected: 1}, true, "served"},
		{"forwarded here: waits, then pending", OpenOptions{Forwarding: Forwarding{Forward: true, Hops: 1}}, false, "pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t, "a", "b", "c")
			if _, err := c.put("a", "f", "v1", PutOptions{}); err != nil {
				t.Fatal(err)
			}
			f := c.fsms["a"].File("f")
			here, hint := f.Valid[1], f.Valid[0]
			c.svcs[here].fences.add("f", c.idx+1, hint) // an invalidation ahead of the log
			if tc.apply {
				go c.apply(meta.Command{Kind: meta.KindSetConfig, Key: meta.CfgDurability, Value: "local"})
			}
			got, _, err := c.read(here, "f", tc.o)
			var held *HeldElsewhereError
			switch tc.want {
			case "served":
				if err != nil || got != "v1" {
					t.Fatalf("got %q, %v; want v1 from %s once the fence's index is applied", got, err, here)
				}
			case "pending":
				if !errors.Is(err, ErrPending) || !errors.Is(err, ErrUnavailable) {
					t.Fatalf("got %q, %v; want pending, not a node to try next", got, err)
				}
			case "sent to hint":
				if !errors.As(err, &held) || held.Node != hint {
					t.Fatalf("got %q, %v; want a redirect to %s", got, err, hint)
				}
			}
			if c.forwarded("read") != 0 {
				t.Fatalf("the read was forwarded on %d times", c.forwarded("read"))
			}
		})
	}
}

// TestConsistentListWaitsForLeader: a consistent listing asks the leader
// how far to catch up; while no leader answers (an election, a leader
// stalled under load) it tries again for up to LeaseWait instead of
// failing at once, then fails with no quorum.
func TestConsistentListWaitsForLeader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fails int // CatchUp calls that fail; -1: all
		want  error
	}{
		{"the leader answers at once", 0, nil},
		{"the leader answers after two failed tries", 2, nil},
		{"no leader at all: no quorum", -1, ErrNoQuorum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeCluster(t, "a", "b", "c")
			if _, err := c.put("a", "d/f", "v1", PutOptions{}); err != nil {
				t.Fatal(err)
			}
			c.noLeader["b"] = tc.fails
			page, err := c.svcs["b"].List(context.Background(), ListOptions{Prefix: "d/", Consistent: true})
			if !errors.Is(err, tc.want) {
				t.Fatalf("list: %v, want %v", err, tc.want)
			}
			if tc.want == nil && (len(page.Files) != 1 || page.Files[0].Path != "d/f") {
				t.Fatalf("list: %+v, want d/f", page)
			}
			if left := c.noLeader["b"]; tc.fails > 0 && left != 0 {
				t.Fatalf("%d of the failing tries were not made", left)
			}
		})
	}
}
