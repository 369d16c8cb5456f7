package files

import (
	"errors"
	"fmt"
	"time"
)

// The errors of the file API. Every error the API returns matches one of
// these with errors.Is (or one of the error types below with errors.As);
// its message is written for a person and says what to do. The HTTP face
// maps each to a status and code (docs/api.md, "Errors").
var (
	// ErrNotFound: no live file at the path.
	ErrNotFound = errors.New("files: not found")
	// ErrPrecondition: an if-match / if-none-match condition failed.
	ErrPrecondition = errors.New("files: precondition failed")
	// ErrHeldElsewhere: another node must serve this request (it holds the
	// write right, or the only valid copies); see *HeldElsewhereError.
	ErrHeldElsewhere = errors.New("files: held by another node")
	// ErrConflict: another write took the file over while this one was in
	// progress; nothing was changed.
	ErrConflict = errors.New("files: conflicting write")
	// ErrTooLarge: the body exceeds the node's limit; see *TooLargeError.
	ErrTooLarge = errors.New("files: body too large")
	// ErrTruncated: the body ended before its announced size.
	ErrTruncated = errors.New("files: body truncated")
	// ErrNoSpace: this node's disk is full.
	ErrNoSpace = errors.New("files: no space left")
	// ErrInternal: an unexpected failure (a bug, a broken disk).
	ErrInternal = errors.New("files: internal error")
	// ErrBadRequest: an option is malformed (e.g. the idempotency key).
	ErrBadRequest = errors.New("files: bad request")
	// ErrUnavailable: the request cannot be served right now; retry after
	// a while (see *UnavailableError). The errors below are kinds of it.
	ErrUnavailable = errors.New("files: unavailable")
	// ErrNoQuorum: the cluster has no leader or quorum, or this node
	// cannot confirm its view with the leader (no read lease).
	ErrNoQuorum = errors.New("files: no quorum")
	// ErrPending: a write to the file is being made visible on every node.
	ErrPending = errors.New("files: write being made visible")
	// ErrInterrupted: a forwarded request lost its node midway. A write
	// was applied completely or not at all; retry it with the same
	// idempotency key to learn which (a retry of an applied write answers
	// with that write's outcome).
	ErrInterrupted = errors.New("files: forwarded request interrupted")
)

// ErrBadPath (path.go) is wrapped by every path validation error.

// kindError is an error of one of the kinds above with its own message.
type kindError struct {
	kind  error
	cause error // may be nil
	msg   string
}

func (e *kindError) Error() string   { return e.msg }
func (e *kindError) Unwrap() []error { return causes(e.kind, e.cause) }

// causes lists the non-nil errors among errs.
func causes(errs ...error) []error {
	out := errs[:0:0]
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}

// NewError returns an error that matches kind with errors.Is and reads
// msg. Transports use it to rebuild a remote node's error.
func NewError(kind error, msg string) error { return &kindError{kind: kind, msg: msg} }

func kindErr(kind, cause error, format string, args ...any) error {
	return &kindError{kind: kind, cause: cause, msg: fmt.Sprintf(format, args...)}
}

// HeldElsewhereError says which node must serve the request: the holder of
// the write right for a write, a node with a valid copy for a read. Node
// and Addr may be empty when that node is unknown here. The native HTTP
// face answers it with a redirect; a caller that cannot redirect asks for
// forwarding instead (OpenOptions.Forward, PutOptions.Forward).
type HeldElsewhereError struct {
	Path string
	Node string // the node's ID
	Addr string // its client API address (host:port), "" if unknown
}

func (e *HeldElsewhereError) Error() string {
	return fmt.Sprintf("%s is served by node %s (%s)", e.Path, e.Node, e.Addr)
}

// Is makes errors.Is(err, ErrHeldElsewhere) true.
func (e *HeldElsewhereError) Is(target error) bool { return target == ErrHeldElsewhere }

// TooLargeError is a body over the node's limit (Config.MaxBody).
type TooLargeError struct {
	Size  int64 // the announced size; -1 when the body was longer than announced or unannounced
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size >= 0 {
		return fmt.Sprintf("body of %d bytes exceeds this node's limit of %d bytes (--max-body)", e.Size, e.Limit)
	}
	return fmt.Sprintf("body exceeds this node's limit of %d bytes (--max-body)", e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// UnavailableError is a refusal to retry after RetryAfter. Kind is
// ErrUnavailable or one of its kinds (ErrNoQuorum, ErrPending,
// ErrInterrupted); errors.Is matches both Kind and ErrUnavailable.
type UnavailableError struct {
	Kind       error
	Msg        string
	RetryAfter time.Duration
	Cause      error // may be nil
}

func (e *UnavailableError) Error() string { return e.Msg }

// Unwrap returns the kind and the cause.
func (e *UnavailableError) Unwrap() []error { return causes(e.Kind, e.Cause) }

// Is makes errors.Is(err, ErrUnavailable) true for every kind.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func unavailable(kind, cause error, msg string) error {
	return &UnavailableError{Kind: kind, Msg: msg, RetryAfter: time.Second, Cause: cause}
}

// errNoLease is a read this node cannot judge: it has no read lease, so
// it cannot confirm its view of the file with the cluster leader.
func errNoLease() error {
	return unavailable(ErrNoQuorum, nil, "this node cannot confirm its view with the cluster leader (no read lease); retry on another node, or add ?stale=1 to accept a possibly old copy")
}

// errPending is a read of a version still being made visible everywhere.
func errPending() error {
	return unavailable(ErrPending, nil, "a write to this file is being made visible on every node; retry in a moment")
}

// errNoQuorum is a cluster round trip that could not be decided.
func errNoQuorum(what string, err error) error {
	return unavailable(ErrNoQuorum, err, "cannot "+what+": the cluster has no leader or quorum right now ("+err.Error()+"); writes resume when a majority of voters is back")
}
