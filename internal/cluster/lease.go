package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// clientLease is this node's read lease: it may answer reads from its
// local state until expiry, once it has applied index.
type clientLease struct {
	mu     sync.Mutex
	expiry time.Time
	index  uint64
	// renewed is closed at the next renewal (nil until first asked for).
	renewed chan struct{}
}

// HasReadLease reports whether this node may serve reads from its local
// state: its lease is unexpired and its state has caught up with the
// leader's at the time of the grant.
func (c *Cluster) HasReadLease() bool {
	c.lease.mu.Lock()
	exp, idx := c.lease.expiry, c.lease.index
	c.lease.mu.Unlock()
	return time.Now().Before(exp) && c.fsm.Applied() >= idx
}

// AwaitReadLease waits until this node holds a read lease (HasReadLease)
// or ctx ends, and reports whether it holds one. A node that lost its
// lease for a moment (a slow renewal, a leader election) gets it back at
// a renewal, then once it has applied the index of the grant.
func (c *Cluster) AwaitReadLease(ctx context.Context) bool {
	for {
		renewed, applied := c.lease.next(), c.fsm.Changed()
		if c.HasReadLease() {
			return true
		}
		select {
		case <-renewed:
		case <-applied:
		case <-ctx.Done():
			return c.HasReadLease()
		}
	}
}

// leaseLoop renews the read lease at a quarter of its duration.
func (c *Cluster) leaseLoop(ctx context.Context) {
	period := c.cfg.Timing.ReadLease / 4
	for {
		c.renewLease(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(period):
		}
	}
}

func (c *Cluster) renewLease(ctx context.Context) {
	sent := time.Now()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timing.ReadLease/2)
	defer cancel()
	var idx uint64
	var err error
	if c.IsLeader() {
		idx, err = c.grantLease(c.cfg.NodeID)
	} else {
		idx, err = c.requestLease(ctx)
	}
	if err != nil {
		return
	}
	// The lease runs from the moment the request left, minus a margin
	// for clock rate differences between this node and the leader.
	c.lease.set(sent.Add(c.cfg.Timing.ReadLease*9/10), idx)
}

// set records a renewal: the lease runs until expiry once index idx is
// applied.
func (l *clientLease) set(expiry time.Time, idx uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expiry, l.index = expiry, idx
	if l.renewed != nil {
		close(l.renewed)
		l.renewed = nil
	}
}

// next returns a channel closed at the next renewal.
func (l *clientLease) next() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.renewed == nil {
		l.renewed = make(chan struct{})
	}
	return l.renewed
}

type leaseReq struct {
	Node string `json:"node"`
}

type leaseResp struct {
	Index uint64 `json:"index"`
}

func (c *Cluster) requestLease(ctx context.Context) (uint64, error) {
	_, addr := c.Leader()
	if addr == "" {
		return 0, ErrNoLeader
	}
	var resp leaseResp
	if err := c.peerCall(ctx, addr, "/peer/cluster/lease", leaseReq{Node: c.cfg.NodeID}, &resp); err != nil {
		return 0, err
	}
	return resp.Index, nil
}

// peerCall POSTs a JSON request to another node's peer API and decodes the
// JSON answer. Non-2xx answers become errors carrying the peer's message.
func (c *Cluster) peerCall(ctx context.Context, addr, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.peers.Do(req)
	if err != nil {
		return fmt.Errorf("peer %s%s: %w", addr, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
			Code  string `json:"code"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return &PeerError{Status: resp.StatusCode, Code: e.Code, Msg: e.Error, Addr: addr}
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// PeerError is a refusal returned by another node's peer API.
type PeerError struct {
	Status    int
	Code, Msg string
	Addr      string
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("peer %s: %d %s: %s", e.Addr, e.Status, e.Code, e.Msg)
}

// Unwrap maps well-known codes back to sentinels.
func (e *PeerError) Unwrap() error {
	switch e.Code {
	case "no_leader":
		return ErrNoLeader
	case "not_ready":
		return ErrNotLeaseReady
	case "refused":
		return ErrRefused
	case "unsupported":
		return errors.Join(ErrRefused, meta.ErrUnsupported)
	}
	return nil
}

// LeaseInfo describes this node's read lease (for debugging answers).
func (c *Cluster) LeaseInfo() string {
	c.lease.mu.Lock()
	defer c.lease.mu.Unlock()
	return fmt.Sprintf("idx=%d left=%v", c.lease.index, time.Until(c.lease.expiry).Round(time.Millisecond))
}
