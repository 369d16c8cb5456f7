package raftstore

import "github.com/mure-dev/mure/internal/store"

// The log writes zeros a chunk ahead of its appends. A sync after an
// append that grew the file also writes the file's metadata (its size,
// the blocks just allocated: on this project's ext4 without a journal,
// buffer by buffer); one after a write into blocks already written and
// synced writes the data alone. A loop of 4 KiB writes each followed by a
// sync took 75-95 µs of CPU a sync appending and 55 µs overwriting a
// zero-filled file (docs/benchmarks.md, issue 16). Writing the zeros
// costs about what writing data does, so it pays where a sync covers few
// bytes: raft's entries (a few hundred bytes a write), not the blob
// store's segments (a whole body a write; measured, it cost more than it
// saved there).
//
// Durability does not depend on the zeros: fdatasync(2) writes the size
// too when it changed, so an append past them is as durable, only
// dearer. Replay stops at the first record whose length or checksum does
// not check, and zeros do not (record.go).

// preallocChunk is how far ahead of its appends a segment writes zeros: a
// larger chunk is written less often but leaves up to that much unused at
// the end of a segment.
const preallocChunk = 1 << 20

// zeros is what a chunk is written from (never written to).
var zeros [preallocChunk]byte

// prealloc makes sure f holds written bytes up to end: if end is past
// *alloc (the end of what was written to f so far, records or zeros), it
// writes zeros from *alloc to a chunk past it (at least to end, at most
// to limit unless end is further) and advances *alloc. A failed write (a
// full disk) is not an error: *alloc stays where the zeros ended, and the
// append grows the file itself, or fails with the real error.
func prealloc(f store.File, alloc *int64, end, limit int64) {
	if end <= *alloc {
		return
	}
	to := max(min(*alloc+preallocChunk, limit), end)
	for *alloc < to {
		n := min(to-*alloc, int64(len(zeros)))
		if _, err := f.WriteAt(zeros[:n], *alloc); err != nil {
			return
		}
		*alloc += n
	}
}
