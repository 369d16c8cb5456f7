// Package raftstore is raft's log and stable store on bbolt: one file,
// every write a transaction fsynced before it returns.
//
// mure first used hashicorp/raft-wal, which fails to restart after a crash
// that follows a log-tail truncation ("sealed segment has no index block",
// hashicorp/raft-wal#31, unfixed in v0.4.0), and raft-boltdb/v2 does not
// build with raft v1.8.0 (it needs go-metrics/compat). This package does
// what raft-boltdb does, in the few lines it takes; see
// docs/decisions/0006-raft-log-store.md.
package raftstore
