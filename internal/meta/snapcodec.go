package meta

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"maps"
	"slices"
	"time"
)

// The binary snapshot format, version 2 or 3 (version 1 is JSON). It is
// streamed: neither writing nor reading holds more than one record's
// encoding in memory, where JSON held the whole document. Integers are
// (zigzag) varints; a string is its length then its bytes.
//
//	magic, uvarint version
//	uvarint applied index
//	uvarint count, nodes: id, peer, http, state, time since
//	uvarint count, settings by key: key, value
//	uvarint count, files in path order (below)
//	uvarint count, idempotency records oldest first: key, kind, path, uvarint version
//	version 3 only: uvarint count, sections by namespace: name, uvarint
//	  version, the part's bytes (a string, up to snapMaxSection)
//	end marker
//
// Version 3 adds the other namespaces' sections; a snapshot without any is
// written as version 2, which binaries older than namespaces read. Version
// 4 adds files' MD5s and attributes (core v3); a snapshot without any is
// written as version 3 or 2.
//
// A file is: uvarint length of the prefix shared with the previous path,
// the rest of the path, uvarint version, flags byte, blob id, varint size,
// sum (32 raw bytes if flagHexSum, else a string), time modified, holder
// (an ID reference), uvarint grant, unfenced and valid (set references);
// then, in version 4: with flagMD5, the MD5 (16 raw bytes if flagHexMD5,
// else a string); with flagAttrs, the attributes: content type, parts
// ETag, uvarint count and headers by name (name, value), uvarint count and
// user metadata by name (name, value).
//
// Records keep sums raw (digest.go), so this binary writes a sum raw, or
// as the empty string when there is none. Binaries before it kept sums as
// strings and wrote those that were not lowercase hex as strings: reading,
// such a string is parsed as hex in either case, and one that is not hex
// at all (which no writer of mure produces) reads as no sum (decision
// 0034).
// A time is varint Unix seconds, uvarint nanoseconds; it is restored in
// UTC. Node IDs and node sets are written once and then referred to by
// number: uvarint 0 is the empty ID or set, 1 introduces a new one (which
// takes the next number), n ≥ 2 refers to the (n-2)th.
//
// Corruption on disk is caught by raft's file snapshot store (a CRC-64 of
// the whole file, checked on open); truncation, by the end marker.
const (
	snapMagic   = "\x00mure-snapshot\n" // JSON (version 1) starts with '{'
	snapVersion = 4
	// snapVersionSections is the version without files' MD5s and
	// attributes, snapVersionCore the one without sections either.
	snapVersionSections = 3
	snapVersionCore     = 2
	snapEnd             = "end\n"
	// snapMaxString bounds a string read from a snapshot, so that a
	// corrupt length cannot ask for gigabytes.
	snapMaxString = 16 << 20
	// snapMaxSection bounds a part's section.
	snapMaxSection = 1 << 30
)

const (
	flagDeleted byte = 1 << iota
	flagPending
	flagHexSum
	flagMD5
	flagHexMD5
	flagAttrs
	// flagsKnown are the flags this binary reads; flagsV4 need version 4.
	flagsKnown = flagDeleted | flagPending | flagHexSum | flagMD5 | flagHexMD5 | flagAttrs
	flagsV4    = flagMD5 | flagHexMD5 | flagAttrs
)

// errBadSnapshot: the snapshot is not one this binary can read.
var errBadSnapshot = errors.New("bad snapshot")

// snapWriter encodes a snapshot onto a buffered writer.
type snapWriter struct {
	w    *bufio.Writer
	buf  []byte
	key  []byte
	ids  map[string]uint64
	sets map[string]uint64 // by setKey
	path string            // previous file's
}

func writeSnapshot(w io.Writer, d *snapshotData) error {
	e := &snapWriter{w: bufio.NewWriterSize(w, 64<<10), ids: map[string]uint64{}, sets: map[string]uint64{}}
	e.w.WriteString(snapMagic)
	e.uvarint(d.formatVersion())
	e.uvarint(d.Applied)
	e.uvarint(uint64(len(d.Nodes)))
	for _, n := range d.Nodes {
		e.str(n.ID)
		e.str(n.PeerAddr)
		e.str(n.HTTPAddr)
		e.str(string(n.State))
		e.time(n.Since)
	}
	keys := slices.Sorted(maps.Keys(d.Config))
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.str(k)
		e.str(d.Config[k])
	}
	e.uvarint(uint64(len(d.Files)))
	for _, f := range d.Files {
		e.file(f)
	}
	e.uvarint(uint64(len(d.Idem)))
	for _, r := range d.Idem {
		e.str(r.Key)
		e.str(string(r.Kind))
		e.str(r.Path)
		e.uvarint(r.Version)
	}
	if len(d.Sections) > 0 || d.formatVersion() == snapVersion {
		e.uvarint(uint64(len(d.Sections)))
		for _, sec := range d.Sections {
			e.str(sec.NS)
			e.uvarint(uint64(sec.Version))
			e.uvarint(uint64(len(sec.Data)))
			e.w.Write(sec.Data)
		}
	}
	e.w.WriteString(snapEnd)
	return e.w.Flush() // bufio keeps the first write error
}

// formatVersion is the oldest format that holds d, so that older binaries
// read the snapshots of a cluster that uses nothing new.
func (d *snapshotData) formatVersion() uint64 {
	switch {
	case slices.ContainsFunc(d.Files, func(f *File) bool { return !f.MD5.IsZero() || f.Attrs != nil }):
		return snapVersion
	case len(d.Sections) > 0:
		return snapVersionSections
	default:
		return snapVersionCore
	}
}

func (e *snapWriter) file(f *File) {
	shared := commonPrefix(e.path, f.Path)
	e.uvarint(uint64(shared))
	e.str(f.Path[shared:])
	e.path = f.Path
	e.uvarint(f.Version)
	var flags byte
	if f.Deleted {
		flags |= flagDeleted
	}
	if f.Pending {
		flags |= flagPending
	}
	if !f.Sum.IsZero() {
		flags |= flagHexSum
	}
	if !f.MD5.IsZero() {
		flags |= flagMD5 | flagHexMD5
	}
	if f.Attrs != nil {
		flags |= flagAttrs
	}
	e.w.WriteByte(flags)
	e.str(f.BlobID)
	e.varint(f.Size)
	if !f.Sum.IsZero() {
		e.w.Write(f.Sum[:])
	} else {
		e.str("")
	}
	e.time(f.Modified.Time())
	e.id(f.Holder)
	e.uvarint(f.Grant)
	e.set(f.unfenced())
	e.set(f.Valid)
	if !f.MD5.IsZero() {
		e.w.Write(f.MD5[:])
	}
	if a := f.Attrs; a != nil {
		e.str(a.ContentType)
		e.str(a.PartsETag)
		e.strMap(a.Headers)
		e.strMap(a.User)
	}
}

func (e *snapWriter) strMap(m map[string]string) {
	e.uvarint(uint64(len(m)))
	for _, k := range sortedKeys(m) {
		e.str(k)
		e.str(m[k])
	}
}

func (e *snapWriter) uvarint(v uint64) {
	e.buf = binary.AppendUvarint(e.buf[:0], v)
	e.w.Write(e.buf)
}

func (e *snapWriter) varint(v int64) {
	e.buf = binary.AppendVarint(e.buf[:0], v)
	e.w.Write(e.buf)
}

func (e *snapWriter) str(s string) {
	e.uvarint(uint64(len(s)))
	e.w.WriteString(s)
}

func (e *snapWriter) time(t time.Time) {
	e.varint(t.Unix())
	e.uvarint(uint64(t.Nanosecond()))
}

func (e *snapWriter) id(id string) {
	if id == "" {
		e.uvarint(0)
		return
	}
	if n, ok := e.ids[id]; ok {
		e.uvarint(n + 2)
		return
	}
	e.ids[id] = uint64(len(e.ids))
	e.uvarint(1)
	e.str(id)
}

func (e *snapWriter) set(ids []string) {
	if len(ids) == 0 {
		e.uvarint(0)
		return
	}
	e.key = appendSetKey(e.key[:0], ids)
	if n, ok := e.sets[string(e.key)]; ok {
		e.uvarint(n + 2)
		return
	}
	e.sets[string(e.key)] = uint64(len(e.sets))
	e.uvarint(1)
	e.uvarint(uint64(len(ids)))
	for _, id := range ids {
		e.id(id)
	}
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
