// Package client is the Go client of the mure HTTP API (docs/api.md).
//
// A Client knows one or more nodes of a cluster. Every request starts at the
// next node in round-robin order; redirects (307/308) are followed by the
// client itself, at most 10 per node, for every method, and a request body is
// never re-sent after some of it was consumed unless it can be rewound
// (io.Seeker). PUT requests carry "Expect: 100-continue" so that a node that
// redirects does so before the body is sent.
//
// Failover: a request that could not be sent at all (dial error) is retried on
// the next node whatever its method. Reads (GET, HEAD, list, status) are also
// retried after any transport error or a 503. Writes (PUT, DELETE of a file)
// carry an Idempotency-Key, the same on every attempt, so that after an
// ambiguous transport error (timeout, reset, EOF once the request may have
// been sent) they are retried on another node if the body can be re-sent;
// otherwise, or when every attempt ended that way, the error wraps
// ErrOutcomeUnknown. A 503 carrying Retry-After is retried on the next node
// after min(Retry-After, 1s). Other error statuses are returned at once as an
// *APIError, which errors.Is maps to ErrNotFound, ErrPreconditionFailed,
// ErrTooLarge, ErrUnavailable and ErrNotModified.
//
// ETags are handled unquoted: FileInfo.ETag never carries the quotes of the
// HTTP header, and IfMatch / IfNoneMatch values are quoted when sent if they
// are not already.
package client
