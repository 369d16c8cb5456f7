package meta

import (
	"slices"
	"strconv"
	"strings"
)

// File is the catalogue record of one path. Records are immutable once
// published: Apply replaces a record with a modified copy, so readers may
// keep a *File without holding any lock. Records share their Valid and
// Unfenced slices (intern.go): never write into them; append copies.
// A File is 176 bytes (Go's size class): check the size class when adding a
// field (BenchmarkCatalogueScale).
type File struct {
	Path string `json:"path"`
	// Version is the raft index of the command that wrote the current
	// content (or the tombstone). It only grows.
	Version uint64 `json:"version"`
	BlobID  string `json:"blob_id,omitempty"`
	Size    int64  `json:"size"`
	// Sum is the content's SHA-256 (digest.go: raw, hex in JSON); zero for
	// a tombstone.
	Sum SHA256 `json:"sha256,omitzero"`
	// MD5 is the MD5 of the content (core v3), which S3 clients compare
	// with an object's ETag; zero for content committed without one
	// (before core v3).
	MD5 MD5 `json:"md5,omitzero"`
	// Attrs are what the writer said about the content (core v3); nil
	// when nothing. Shared between a record's copies: never written into.
	Attrs    *Attrs `json:"attrs,omitempty"`
	Modified Stamp  `json:"modified"`
	Deleted  bool   `json:"deleted,omitempty"`
	// Pending is set from a Commit or Delete until its Settle: the leader
	// has not yet made sure that no node still answers for the previous
	// state, so no node may answer for this one either (reads wait).
	Pending bool `json:"pending,omitempty"`
	// Unfenced lists, while Pending, the nodes the leader must still fence
	// before settling: a later write to a pending file inherits them, since
	// they may still answer for a state older than both. Behind a pointer
	// (nil: none), 8 bytes where a slice takes 24, as most records have
	// none: this brings File into a smaller size class.
	Unfenced *[]string `json:"unfenced,omitempty"`
	// Holder is the node holding the exclusive write right; empty when the
	// file is replicated (not suspended).
	Holder string `json:"holder,omitempty"`
	// Grant is the raft index of the Acquire that gave Holder the right:
	// a fencing token that a Commit must present.
	Grant uint64 `json:"grant,omitempty"`
	// Valid lists, sorted, the nodes holding a verified copy of Version.
	Valid []string `json:"valid,omitempty"`
}

// Suspended reports whether a node holds the file's write right, which
// suspends its replication.
func (f *File) Suspended() bool { return f.Holder != "" }

// Exists reports whether the path has live content.
func (f *File) Exists() bool { return f != nil && f.Version != 0 && !f.Deleted }

// IsValidOn reports whether node holds a valid copy of the current version.
func (f *File) IsValidOn(node string) bool {
	_, ok := slices.BinarySearch(f.Valid, node)
	return ok
}

// ETag is the entity tag of the current version.
func (f *File) ETag() string { return ETagOf(f.Version) }

// clone returns a copy to modify before it is published (State.put). Its
// Valid is a private copy, so in-place edits (sort, delete) never reach a
// shared set; Unfenced is only ever replaced whole.
func (f *File) clone() *File {
	c := *f
	c.Valid = slices.Clone(f.Valid)
	return &c
}

// unfenced returns the nodes of Unfenced (nil when none).
func (f *File) unfenced() []string {
	if f.Unfenced == nil {
		return nil
	}
	return *f.Unfenced
}

// nodesRef returns a reference to ids for Unfenced, nil when empty.
func nodesRef(ids []string) *[]string {
	if len(ids) == 0 {
		return nil
	}
	return &ids
}

// ETagOf formats a version as a quoted entity tag.
func ETagOf(version uint64) string {
	return `"` + strconv.FormatUint(version, 10) + `"`
}

// ParseETag returns the version named by an entity tag (quoted or not, weak
// or strong), or false.
func ParseETag(tag string) (uint64, bool) {
	tag = strings.TrimPrefix(tag, "W/")
	if len(tag) >= 2 && tag[0] == '"' && tag[len(tag)-1] == '"' {
		tag = tag[1 : len(tag)-1]
	}
	v, err := strconv.ParseUint(tag, 10, 64)
	return v, err == nil && v > 0
}
