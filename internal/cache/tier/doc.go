// Package tier holds a cache's objects: a memory tier bounded in bytes
// with a scan-resistant policy (W-TinyLFU, maypok86/otter), and a disk tier
// bounded in bytes whose files are written crash-safely (temporary file,
// fsync, rename) and checksummed, checked before a body is served, and
// found again after a restart. Every stored object goes to disk (when the
// node has a disk tier) and to memory; an object evicted from memory stays
// on disk (demotion), one read from disk goes back to memory (promotion).
//
// An object is whole or absent: Put takes a complete body, and a file that
// fails its checksum is removed and reported as missing.
package tier
