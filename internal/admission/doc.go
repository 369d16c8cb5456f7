// Package admission keeps a node responsive under overload.
//
// A Limiter admits at most Config.MaxInFlight client requests at once.
// A request that finds every slot taken waits in a bounded waiting room
// (Config.MaxQueue places) for at most Config.QueueTimeout; a request
// that finds the waiting room full, or whose wait runs out, is answered
// at once with 503, a Retry-After header and the JSON error envelope
// with code "overloaded" (see internal/api). A client that goes away
// while waiting leaves the waiting room without an answer.
//
// What this bounds: the number of handlers running (and so the file
// descriptors, buffers and disk/peer I/O they hold) and the time an
// admitted request spends waiting before its handler starts. Rejected
// requests cost one small JSON answer. Requests under the exempt path
// prefixes (health, readiness, metrics, status) bypass the limiter
// entirely, so an overloaded node still reports on itself.
//
// What it does not bound: connections the listener accepts. Requests
// that are waiting or being rejected still hold their socket; bound
// those with the server's timeouts and, if needed, a limiting listener.
//
// Implementation: the slots are a buffered channel used as a semaphore.
// A free slot is taken with a non-blocking send (no allocation, no
// lock). Waiting is a blocking send on the same channel in a select
// with a pooled timer and the request's context; Go hands a released
// slot to the longest-waiting sender, so waiters are served in arrival
// order and a newcomer cannot overtake them. The waiting room is an
// atomic counter (compare-and-swap), so it never holds more than
// MaxQueue requests and no mutex is held while waiting.
//
// Wiring (for internal/node): wrap the client API inside the token check
// and inside instrument, so rejections show in mure_http_requests_total
// and unauthenticated requests cannot take slots:
//
//	instrument(api.RequireToken(token, open, lim.Wrap(route(mux))))
//
// A face that answers in its own format (the S3 API's XML errors) takes
// a slot with Acquire, which returns an *OverloadedError instead of
// answering, and gives it back with Release.
//
// Do not wrap the peer API with the same Limiter: a client request that
// waits on a peer (replication, forwarding) while that peer's client
// requests wait on this node would deadlock until QueueTimeout.
package admission
