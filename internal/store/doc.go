// Package store is a node's local blob storage on disk.
//
// A blob is the whole content of one version of one file, identified by
// (path, id): path is the file's key, treated as an opaque string (it is
// only ever hashed, never used as a file name), and id is a caller-chosen
// blob ID of 1..64 bytes of [0-9a-zA-Z_-] (anything else is ErrBadID). The
// package knows nothing about HTTP, raft or the cluster.
//
// # Layout
//
//	<dir>/LOCK                       flock(2)ed while a Store is open
//	<dir>/tmp/<hh>/                  staging, by the path's hh; emptied by Open
//	<dir>/blobs/<hh>/<H>/<id>        content: exactly the bytes written
//	<dir>/blobs/<hh>/<H>/<id>.meta   sidecar describing <id>
//	<dir>/quarantine/<H>-<id>[.meta] blobs that failed a check (kept for
//	                                 inspection; delete them at will)
//	<dir>/segments/<16 hex>.seg      small blobs, appended (below)
//
// # Small blobs: segments with group commit (decision 0037)
//
// A blob of at most Options.SmallMax bytes (64 KiB by default) gets no
// file of its own: Commit appends one record (header with CRC-32C and
// SHA-256, path, id, content; record.go) to the current segment and
// returns once an fsync covers it. Writers committing at once share that
// fsync: the first to wait syncs for every record appended so far, the
// others find theirs covered (segments.go). A removal appends a removal
// record. Open reads every segment, oldest first, and rebuilds the index
// (later records win); a record whose header does not check ends its
// segment (the unsynced tail of a power loss). Every read of a small blob
// from disk checks its CRCs; a blob that fails is quarantined like a
// file's. Stat, List and Walk read only a record's header and names,
// whose CRC covers the content's size and sums. Each Open starts a new segment; a segment is sealed at 64 MiB;
// a sealed one less than half live is compacted in the background
// (compact.go). The invariants below are those of blobs in files of
// their own.
//
// H is the lowercase hex SHA-256 of path and hh its first two characters
// (the 256 <hh> directories are created at Open). Hashing makes every path,
// including "..", "a/../../x" or 1 KiB of UTF-8, a fixed-length name inside
// dir, and lets "a/b" and "a/b/c" coexist. Ids cannot contain '.', so they
// never collide with sidecars.
//
// The sidecar is five text lines: "mure-blob 1", `path "<Go-quoted path>"`,
// "id <id>", "size <bytes>", "sha256 <hex>". It stores the original path
// (needed by Walk, since the directory name is a hash) and the checksum
// (needed by Stat and Verify), keeping the data file pure content so that it
// can be served with sendfile. Go quoting round-trips arbitrary bytes.
//
// # Invariants and crash consistency
//
//  1. A data file <id> only ever appears (by rename, the commit point) after
//     its content was fsynced and after a sidecar describing that exact
//     content was fsynced and renamed into place; one fsync of the
//     directory then makes both durable, and Commit returns. A crash before
//     that fsync may leave either name without the other (Open deletes it:
//     the commit never returned), never a data file beside a sidecar that
//     describes other content: when an old sidecar of the same id exists
//     (case 2), the directory is fsynced between the two renames.
//  2. Replacing an id with different content first unlinks the old data
//     file (and fsyncs the directory), then proceeds as in 1. Committing the
//     same content (same size and sum) again just renames the new data over
//     the old one: atomic, both are described by the unchanged sidecar.
//  3. Removal unlinks data files before sidecars, then fsyncs the directory.
//  4. Everything is staged in <dir>/tmp, on the same file system, so a crash
//     while writing leaves only temp files, which Open deletes.
//
// After a crash the only possible debris is therefore: temp files (deleted),
// a sidecar without data (an interrupted commit or removal: deleted), or a
// data file without sidecar (an interrupted removal: deleted). Open scans
// blobs/ once to remove those and to compute the Usage counters; it reads
// directory entries only, not sidecars or content. Size mismatches between
// a sidecar and its data file are reported by Stat/List/Walk, content
// corruption by Verify, both as ErrChecksum.
//
// With Options.NoSync the order is kept but nothing is fsynced: a machine
// crash (not a process crash) may then lose or tear recent blobs.
//
// Every file operation goes through Options.FS (default OS(), package os
// itself, so reads keep sendfile). Tests run a store on crashfs, a disk
// that keeps only what was fsynced when it "loses power", to check the
// invariants above (TestPowerLoss).
//
// # Checksums
//
// A blob found on disk at Open is unverified: before it is first served,
// its content is hashed and compared with the sidecar's SHA-256. Open does
// so at once for small blobs (at most 1 MiB, or cacheable); a larger one
// is checked as it is read from start to end (the read that would return
// its last bytes returns ErrChecksum instead if the whole does not match;
// other access patterns check the whole first), so that a large first read
// costs one pass over the file, not two. Verify and Scrub (a paced pass
// over every blob) check blobs again at any time. A blob committed by this
// Store is trusted: its sum was computed from the bytes as written.
//
// A blob that fails a check is moved to quarantine/ at once (unless it was
// replaced meanwhile): from then on it is ErrNotFound, and the caller
// fetches a healthy copy elsewhere. Checks counts the checks. Between two
// checks nothing is verified per read: a blob that rots after its check is
// served as it is until the next scrub pass reaches it.
//
// A small blob's record is checked (both CRC-32Cs) when it enters the
// index: written by this Store, read whole by Open's scan, or moved by
// compaction; one that does not check there is marked suspect and read
// and checked at every Open (found corrupt). A read into memory checks it
// again; one of more than SectionMin bytes sent from its segment file
// (Blob.Section) is not read at all (decision 0053).
//
// # Disk full
//
// ENOSPC and EDQUOT, from write, fsync, close, mkdir or rename, are returned
// wrapping ErrNoSpace (and the original errno). A failed Writer deletes its
// temp file immediately. Nothing is written outside tmp until the content
// and the sidecar are complete, so committed blobs are never damaged by a
// full disk.
//
// # Concurrency
//
// A Store is safe for concurrent use. Mutations (Commit, Remove,
// RemoveExcept) of a path are serialised by one of 256 lock stripes chosen by
// the path's hash; Stat, List, Walk and Verify take the read side. Open takes
// no lock, except the read side for a blob not verified yet. Close waits
// for in-flight mutations; afterwards calls fail with
// ErrClosed. A Writer or a Blob is used by one goroutine at a time (Blob's
// ReadAt excepted).
//
// # Cache
//
// With Options.CacheBytes > 0, blobs of at most CacheMaxBlob bytes (64 KiB by
// default) are read fully by Open, kept in a byte-bounded LRU keyed by
// (path, id), and served from memory (Blob.Bytes non-nil, Blob.File nil); a
// cache hit allocates only the Blob. A small blob of more than SectionMin
// bytes is read into the cache only at its second miss: at its first it is
// served from its segment file (a doorkeeper, door.go). Commit, Remove, RemoveExcept and a
// failed Verify invalidate entries; a per-stripe generation counter sampled
// before a miss reads the file keeps a racing reader from re-inserting
// content that was removed or replaced meanwhile.
package store
