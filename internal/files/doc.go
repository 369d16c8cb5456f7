// Package files is paper 000's replicated file service on one node: it
// serves reads from the local replica when the node may (valid copy, read
// lease, no pending invalidation), redirects otherwise, takes the per-file
// write right from the serializer (the raft state machine) for writes,
// makes invalidations effective before a write is acknowledged, pushes a
// standby copy for durability, and resumes replication by fetching new
// versions from their holders. See docs/protocol.md.
package files
