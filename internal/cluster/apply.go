package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/mure-dev/mure/internal/meta"
)

// Apply commits cmd through raft, on the leader or forwarded to it, and
// returns once this node has applied it too (so a proposer that acts on
// the result sees it in its own state). Invalidating commands return only
// after the leader's barrier made the invalidation effective.
//
// A forwarded command whose answer is lost is retried; every command is
// idempotent or fenced (see docs/protocol.md), so a retry cannot apply a
// write twice.
func (c *Cluster) Apply(ctx context.Context, cmd meta.Command) (*meta.Result, error) {
	return c.propose(ctx, proposal{cmd: &cmd})
}

// ApplyOp commits an op of a namespace other than the core, as Apply
// does. The leader refuses one that a voter does not support
// (meta.ErrUnsupported).
func (c *Cluster) ApplyOp(ctx context.Context, op meta.Op) (*meta.Result, error) {
	return c.propose(ctx, proposal{op: &op})
}

func (c *Cluster) propose(ctx context.Context, p proposal) (*meta.Result, error) {
	backoff := 10 * time.Millisecond
	for {
		res, err := c.applyOnce(ctx, p)
		if err == nil {
			if werr := c.fsm.WaitApplied(ctx, res.Index); werr != nil {
				return nil, werr
			}
			return res, nil
		}
		if !retryable(err) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("apply %s: %w (last error: %v)", p, ctx.Err(), err)
		case <-time.After(backoff):
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
}

func retryable(err error) bool {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, raft.ErrRaftShutdown),
		errors.Is(err, ErrRefused):
		return false
	case errors.Is(err, ErrNoLeader), errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrEnqueueTimeout):
		return true
	}
	var pe *PeerError
	if errors.As(err, &pe) {
		return pe.Status == http.StatusServiceUnavailable
	}
	// The leader could not be reached: retry, maybe with a new one.
	return true
}

func (c *Cluster) applyOnce(ctx context.Context, p proposal) (*meta.Result, error) {
	if c.IsLeader() {
		return c.proposeLocal(ctx, p)
	}
	_, addr := c.Leader()
	if addr == "" {
		return nil, ErrNoLeader
	}
	return c.fwd.forward(ctx, addr, p)
}

// proposeLocal runs on the leader.
func (c *Cluster) proposeLocal(ctx context.Context, p proposal) (*meta.Result, error) {
	binary, err := c.checkSupported(p)
	if err != nil {
		return nil, err
	}
	if p.op != nil {
		return c.raftApply(ctx, p)
	}
	cmd := *p.cmd
	if cmd.Time.IsZero() {
		cmd.Time = time.Now().UTC()
	}
	res, err := c.raftApply(ctx, proposal{cmd: &cmd, binary: binary})
	if err != nil {
		return nil, err
	}
	retried := res.Duplicate && res.File != nil
	if retried {
		// A retried write whose first attempt may have lost its
		// barrier: make sure no node — the proposer included, as for a
		// first attempt — answers from an older state. The barrier runs
		// even when this leader has leased no node: a leader just elected
		// (the usual reason for a retry) has granted none yet, while nodes
		// its predecessor leased may still answer for the state before
		// the write until the invalidation wait is over; the barrier also
		// settles a version its first attempt left pending.
		res.Invalidated = c.leasedExcept(nil)
	}
	if res.Err == nil && (len(res.Invalidated) > 0 || retried) && c.cfg.Barrier != nil {
		if err := c.waitInvalidationReady(ctx); err != nil {
			if errors.Is(err, ErrNoLeader) {
				// Deposed after committing: the leases this node
				// granted are still live at their holders, so they are
				// told anyway (the settle that follows fails; the next
				// leader settles). The writer learns the outcome is
				// unknown.
				_ = c.cfg.Barrier(ctx, res)
			}
			return nil, err
		}
		if err := c.cfg.Barrier(ctx, res); err != nil {
			return nil, fmt.Errorf("invalidate %s: %w", cmd.Path, err)
		}
	}
	return res, nil
}

// raftApply commits one entry and returns the state machine's result.
func (c *Cluster) raftApply(ctx context.Context, p proposal) (*meta.Result, error) {
	b, err := p.encode()
	if err != nil {
		return nil, err
	}
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	f := c.raft.Apply(b, timeout)
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("raft apply %s: %w", p, err)
	}
	res, ok := f.Response().(*meta.Result)
	if !ok {
		return nil, fmt.Errorf("raft apply %s: unexpected response %T", p, f.Response())
	}
	return res, nil
}

// ReadIndex returns an index that, once applied locally, makes this node's
// state at least as new as the leader's at the time of the call.
func (c *Cluster) ReadIndex(ctx context.Context) (uint64, error) {
	if c.IsLeader() {
		if err := c.confirmLeadership(); err != nil {
			return 0, err
		}
		return c.fsm.Applied(), nil
	}
	_, addr := c.Leader()
	if addr == "" {
		return 0, ErrNoLeader
	}
	var resp leaseResp
	if err := c.peerCall(ctx, addr, "/peer/cluster/readindex", struct{}{}, &resp); err != nil {
		return 0, err
	}
	return resp.Index, nil
}

// CatchUp waits until this node's state is at least as new as the
// leader's now: the basis of consistent listings.
func (c *Cluster) CatchUp(ctx context.Context) error {
	idx, err := c.ReadIndex(ctx)
	if err != nil {
		return err
	}
	return c.fsm.WaitApplied(ctx, idx)
}

// leasedExcept returns the nodes holding a lease from this leader, less keep.
func (c *Cluster) leasedExcept(keep []string) []string {
	c.leader.mu.Lock()
	defer c.leader.mu.Unlock()
	var out []string
	now := time.Now()
	for id, d := range c.leader.table {
		if now.Before(d) && !slices.Contains(keep, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// applyLocal commits a core command on the leader.
func (c *Cluster) applyLocal(ctx context.Context, cmd meta.Command) (*meta.Result, error) {
	return c.proposeLocal(ctx, proposal{cmd: &cmd})
}
