package meta

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// File is the catalogue record of one path. Records are immutable once
// published: Apply replaces a record with a modified copy, so readers may
// keep a *File without holding any lock.
type File struct {
	Path string `json:"path"`
	// Version is the raft index of the command that wrote the current
	// content (or the tombstone). It only grows.
	Version  uint64    `json:"version"`
	BlobID   string    `json:"blob_id,omitempty"`
	Size     int64     `json:"size"`
	Sum      string    `json:"sha256,omitempty"`
	Modified time.Time `json:"modified"`
	Deleted  bool      `json:"deleted,omitempty"`
	// Holder is the node holding the exclusive write right; empty when the
	// file is replicated (not suspended).
	Holder string `json:"holder,omitempty"`
	// Grant is the raft index of the Acquire that gave Holder the right:
	// a fencing token that a Commit must present.
	Grant uint64 `json:"grant,omitempty"`
	// Valid lists, sorted, the nodes holding a verified copy of Version.
	Valid []string `json:"valid,omitempty"`
	// Idem maps recent idempotency keys to the version they produced.
	Idem []IdemEntry `json:"idem,omitempty"`
}

// IdemEntry remembers the outcome of one idempotent write.
type IdemEntry struct {
	Key     string `json:"key"`
	Version uint64 `json:"version"`
}

// maxIdem bounds the idempotency keys remembered per path.
const maxIdem = 8

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

// IdemVersion returns the version an idempotency key produced, if remembered.
func (f *File) IdemVersion(key string) (uint64, bool) {
	if f == nil || key == "" {
		return 0, false
	}
	for _, e := range f.Idem {
		if e.Key == key {
			return e.Version, true
		}
	}
	return 0, false
}

func (f *File) clone() *File {
	c := *f
	c.Valid = slices.Clone(f.Valid)
	c.Idem = slices.Clone(f.Idem)
	return &c
}

func (f *File) rememberIdem(key string, version uint64) {
	if key == "" {
		return
	}
	f.Idem = slices.DeleteFunc(f.Idem, func(e IdemEntry) bool { return e.Key == key })
	f.Idem = append(f.Idem, IdemEntry{Key: key, Version: version})
	if len(f.Idem) > maxIdem {
		f.Idem = f.Idem[len(f.Idem)-maxIdem:]
	}
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
