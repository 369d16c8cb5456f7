package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// Forwarding (docs/protocol.md, "Forwarding"): a caller that cannot follow
// a redirect (S3, WebDAV, FUSE, the cache) asks the node it reached to do
// the work. A read is streamed from a node with a valid copy, which judges
// it as if the client had come to it; a write is handed, body and all, to
// the live holder of the write right, which runs Put as for its own
// client. A forwarded request carries Hops (it is forwarded again only
// while Hops < MaxForwardHops) and, for a write, an idempotency key, so
// that a retry is recognised wherever it lands.

// forwardPeer returns the peer address of target, counting a forward.
func (s *Service) forwardPeer(op, target string) (string, error) {
	_, peer, ok := s.nodeAddrs(target)
	if !ok || target == "" || target == s.self {
		return "", unavailable(ErrUnavailable, nil, "the node holding this file ("+target+") is not reachable from here")
	}
	s.metrics.forwarded.WithLabelValues(op).Inc()
	return peer, nil
}

// forwardRead streams a read from target.
func (s *Service) forwardRead(ctx context.Context, path, target string, o OpenOptions) (*Reader, error) {
	peer, err := s.forwardPeer("read", target)
	if err != nil {
		return nil, err
	}
	fo := o
	fo.Hops++
	fo.Explain = nil
	info, body, err := s.peers.Read(ctx, peer, path, fo)
	if err != nil {
		return nil, s.forwardError("read", path, target, err)
	}
	off := min(o.Offset, info.Size)
	n := info.Size - off
	if o.Length > 0 && o.Length < n {
		n = o.Length
	}
	return &Reader{info: info, s: s, node: target, remote: body, length: n}, nil
}

// putElsewhere sends a write to holder: an error naming it, or, when the
// caller asked for it, the write forwarded.
func (s *Service) putElsewhere(ctx context.Context, path, holder string, body io.Reader, o PutOptions) (Info, error) {
	if !o.mayForward() {
		return Info{}, s.heldElsewhere(path, holder)
	}
	peer, err := s.forwardPeer("write", holder)
	if err != nil {
		return Info{}, err
	}
	fo := o
	fo.Hops++
	fo.IdempotencyKey = idemOrRandom(o.IdempotencyKey)
	info, err := s.peers.Put(ctx, peer, path, body, fo)
	if err == nil {
		return info, nil
	}
	if v, ok := s.forwardedOutcome(ctx, meta.KindCommit, path, fo.IdempotencyKey, err); ok {
		if info, err := s.settledDuplicate(ctx, path, v); err == nil {
			return info, nil
		}
	}
	return Info{}, s.writeForwardError("write", path, holder, fo.IdempotencyKey, err)
}

// deleteElsewhere is putElsewhere for a delete.
func (s *Service) deleteElsewhere(ctx context.Context, path, holder string, o DeleteOptions) error {
	if !o.mayForward() {
		return s.heldElsewhere(path, holder)
	}
	peer, err := s.forwardPeer("delete", holder)
	if err != nil {
		return err
	}
	fo := o
	fo.Hops++
	fo.IdempotencyKey = idemOrRandom(o.IdempotencyKey)
	err = s.peers.Delete(ctx, peer, path, fo)
	if err == nil {
		return nil
	}
	if v, ok := s.forwardedOutcome(ctx, meta.KindDelete, path, fo.IdempotencyKey, err); ok {
		if _, err := s.settledDuplicate(ctx, path, v); err == nil {
			return nil
		}
	}
	return s.writeForwardError("delete", path, holder, fo.IdempotencyKey, err)
}

// forwardedOutcome tries to learn whether a forwarded write that failed in
// transit was applied: its idempotency key is in the catalogue once this
// node has caught up with the leader.
func (s *Service) forwardedOutcome(ctx context.Context, kind meta.Kind, path, key string, err error) (uint64, bool) {
	if isAPIError(err) {
		return 0, false // the other node answered: it applied nothing
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if s.cl.CatchUp(ctx) != nil {
		return 0, false
	}
	return s.idemDone(kind, path, key)
}

// forwardError is the error of a forwarded read that failed.
func (s *Service) forwardError(op, path, target string, err error) error {
	switch {
	case errors.Is(err, ErrHeldElsewhere):
		return unavailable(ErrUnavailable, err, fmt.Sprintf("%s moved while the request was forwarded (the cluster is changing); retry", path))
	case isAPIError(err):
		return err
	}
	s.metrics.forwardFailed.WithLabelValues(op).Inc()
	return unavailable(ErrUnavailable, &unreachableError{err}, fmt.Sprintf("could not forward the %s of %s to node %s (%v); retry", op, path, target, err))
}

// errUnreachable marks a forward that failed in transit (the other node
// gave no answer of its file service).
var errUnreachable = errors.New("files: node unreachable")

type unreachableError struct{ err error }

func (e *unreachableError) Error() string   { return e.err.Error() }
func (e *unreachableError) Unwrap() []error { return []error{errUnreachable, e.err} }

// writeForwardError is the error of a forwarded write whose outcome is
// not known to be success.
func (s *Service) writeForwardError(op, path, holder, key string, err error) error {
	switch {
	case errors.Is(err, ErrHeldElsewhere):
		return unavailable(ErrUnavailable, err, fmt.Sprintf("the write right of %s moved while the %s was forwarded (the cluster is changing); nothing was changed; retry", path, op))
	case isAPIError(err):
		return err
	}
	s.metrics.forwardFailed.WithLabelValues(op).Inc()
	return &UnavailableError{Kind: ErrInterrupted, Cause: err, RetryAfter: time.Second,
		Msg: fmt.Sprintf("node %s, holding the write right of %s, stopped answering during the forwarded %s (%v): it was applied completely or not at all; retry with Idempotency-Key %s to learn which",
			holder, path, op, err, key)}
}

// apiKinds are the errors of the file API: an error matching one came
// from a node's file service, not from the transport.
var apiKinds = []error{ErrNotFound, ErrPrecondition, ErrHeldElsewhere, ErrConflict, ErrTooLarge, ErrTruncated,
	ErrNoSpace, ErrBadRequest, ErrBadPath, ErrUnavailable, ErrInternal}

// isAPIError reports whether err is an answer of a file service.
func isAPIError(err error) bool {
	for _, k := range apiKinds {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}
