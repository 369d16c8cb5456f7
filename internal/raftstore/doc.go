// Package raftstore is raft's log and stable store: an append-only log of
// CRC-32C framed records in segment files, written through store.FS (so
// that the power-loss tests can run it on a disk that drops what was not
// synced). Every call that changes it appends its records with one write
// and one fdatasync before it returns, into zeros written ahead of the
// appends (prealloc.go); the index of entries lives in memory.
//
// mure first used hashicorp/raft-wal, which fails to restart after a crash
// that follows a log-tail truncation (hashicorp/raft-wal#31), then bbolt
// (decision 0006), which the crash seam cannot cover and which costs two
// fdatasyncs per append. See docs/decisions/0019-raft-log-on-the-crash-seam.md.
package raftstore
