// Package files is paper 000's replicated file service on one node, as a
// Go API: Put, Open, Stat, Delete, List, Copy and Rename, with conditions,
// idempotency keys and typed errors (errors.go). Open serves from the
// local replica when the node may (valid copy, read lease, no pending
// invalidation); Put takes the per-file write right from the serializer
// (the raft state machine), pushes a standby copy for durability and
// commits; invalidations are made effective before a write is
// acknowledged; a replication worker resumes replicas by fetching new
// versions from their holders. When another node must serve a request,
// the API says which (*HeldElsewhereError) or, if the caller asks,
// forwards it there (forward.go).
//
// The package imports no net/http: the native HTTP face is filehttp, the
// traffic to other nodes goes through the Peers seam (implemented by
// filepeer), the node's cluster seat through Cluster. See
// docs/architecture.md, docs/protocol.md and docs/decisions/0011-file-api.md.
package files
