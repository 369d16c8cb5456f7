// Package meta is mure's replicated state machine: the catalogue of files
// (versions, write rights, valid replicas, tombstones), the cluster's nodes
// and its settings. It is pure and deterministic: the same commands applied
// in the same order give the same state on every node. hashicorp/raft drives
// it through FSM; nothing here does I/O besides snapshot encoding.
//
// The 000 protocol lives in these transitions (see docs/protocol.md):
//
//   - Acquire gives one node the exclusive write right of one path (the
//     serializer). The right's raft index is its fencing token ("grant").
//   - Commit, by the right's holder only, records a new version whose valid
//     copies are the holder and its standby; every other copy stops being
//     valid (the command's Invalidated list, which the leader must make
//     effective before the writer is answered).
//   - Release ends the right: replication of the path resumes, and nodes
//     record their fresh copies with Replica.
//   - Delete leaves a tombstone so that a node that missed it cannot bring
//     the file back.
//
// Those commands (Command) are the core namespace. Other kinds of records
// are namespaces of their own: a Part registered with NewFSM applies its
// Ops and writes its own snapshot section. Nodes advertise the namespace
// versions they apply (Supports) and the leader refuses what a voter does
// not support (CheckSupported). Settings are registered by the packages
// that own them (RegisterSetting). See
// docs/decisions/0012-versioned-namespaces.md.
package meta
