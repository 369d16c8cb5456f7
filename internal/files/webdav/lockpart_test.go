package webdav

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

func lockOp(t *testing.T, kind string, b lockBody) meta.Op {
	t.Helper()
	body, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return meta.Op{NS: NS, V: Version, Kind: kind, Body: body}
}

// Which locks exclude which, expiry by the proposer's time, and a
// snapshot that restores the same records.
func TestLockPart(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	p := NewLockPart()
	lock := func(tok, root string, zero bool, d time.Duration, now time.Time) error {
		return p.Apply(1, lockOp(t, OpLock, lockBody{Lock: &Lock{Token: tok, Root: root, ZeroDepth: zero, Duration: d}, Now: now})).Err
	}
	if err := lock("t1", "/a/b", false, time.Minute, t0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		root string
		zero bool
		ok   bool
	}{
		{"the same resource", "/a/b", true, false},
		{"below a deep lock", "/a/b/c", true, false},
		{"a deep lock above", "/a", false, false},
		{"a deep lock on the root", "/", false, false},
		{"a shallow lock above", "/a", true, true},
		{"a sibling", "/a/bc", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := lock("x-"+c.name, c.root, c.zero, time.Minute, t0.Add(time.Second))
			if c.ok != (err == nil) || err != nil && !errors.Is(err, ErrLocked) {
				t.Fatalf("lock %s (zero depth %v): %v, want ok=%v", c.root, c.zero, err, c.ok)
			}
		})
	}
	if b := p.Blocking("/a/b/c", false, t0.Add(time.Second)); b == nil || b.Token != "t1" {
		t.Fatalf("a write below a deep lock is not blocked: %+v", b)
	}
	if b := p.Blocking("/a/b/c", false, t0.Add(2*time.Minute)); b != nil {
		t.Fatalf("an expired lock still blocks: %+v", b)
	}
	snap, err := p.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	q := NewLockPart()
	if err := q.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if q.Len() != p.Len() || q.Get("t1", t0) == nil {
		t.Fatalf("restored %d locks, had %d", q.Len(), p.Len())
	}
	// Expiry is the op's time: a lock taken after t1 expired succeeds.
	if err := lock("t2", "/a/b", false, time.Minute, t0.Add(2*time.Minute)); err != nil {
		t.Fatalf("lock after the first expired: %v", err)
	}
	if err := p.Apply(3, lockOp(t, OpRefresh, lockBody{Token: "t2", For: -1, Now: t0.Add(2 * time.Minute)})).Err; err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(2, lockOp(t, OpUnlock, lockBody{Token: "t1", Now: t0.Add(3 * time.Minute)})).Err; !errors.Is(err, ErrNoSuchLock) {
		t.Fatalf("unlock of an expired lock: %v", err)
	}
	if p.Get("t2", t0.Add(time.Hour)) == nil {
		t.Fatal("a lock refreshed to infinite expired")
	}
	// An empty part writes no snapshot section (older binaries read it).
	if snap, _ := NewLockPart().Snapshot(); snap != nil {
		t.Fatalf("an empty part wrote a section: %s", snap)
	}
}
