package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/mure-dev/mure/internal/meta"
)

// TestAwaitReadLease: a wait for the read lease ends when a renewal
// arrives and its grant's index is applied, and not before; without one
// it ends with the caller's context.
func TestAwaitReadLease(t *testing.T) {
	apply := func(t *testing.T, fsm *meta.FSM, idx uint64) {
		data, err := meta.Command{Kind: meta.KindSetConfig, Key: meta.CfgDurability, Value: "local"}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		fsm.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: data})
	}
	for _, tc := range []struct {
		name   string
		renew  func(c *Cluster) // while the wait runs
		after  func(t *testing.T, c *Cluster)
		expect bool
	}{
		{"no renewal: gives up", func(*Cluster) {}, nil, false},
		{"renewed", func(c *Cluster) { c.lease.set(time.Now().Add(time.Minute), 0) }, nil, true},
		{"renewed, already expired", func(c *Cluster) { c.lease.set(time.Now().Add(-time.Second), 0) }, nil, false},
		{"renewed at an index not applied yet", func(c *Cluster) { c.lease.set(time.Now().Add(time.Minute), 1) }, nil, false},
		{"renewed, then the grant's index applied", func(c *Cluster) { c.lease.set(time.Now().Add(time.Minute), 1) },
			func(t *testing.T, c *Cluster) { apply(t, c.fsm, 1) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cluster{fsm: meta.NewFSM()}
			wait := 200 * time.Millisecond
			if tc.expect {
				wait = 10 * time.Second // ended by the renewal, not the deadline
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			done := make(chan bool, 1)
			go func() { done <- c.AwaitReadLease(ctx) }()
			tc.renew(c)
			if tc.after != nil {
				tc.after(t, c)
			}
			if got := <-done; got != tc.expect {
				t.Fatalf("AwaitReadLease = %v, want %v", got, tc.expect)
			}
			if got := c.HasReadLease(); got != tc.expect {
				t.Fatalf("HasReadLease = %v after the wait, want %v", got, tc.expect)
			}
		})
	}
}
