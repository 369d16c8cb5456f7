package meta

import (
	"maps"
	"slices"
)

// Attrs are what a writer said about a file's content besides its bytes
// (core v3): kept with the version, replaced by the next write. The S3,
// WebDAV and native faces map them to their own names. An Attrs is
// immutable once in a record: never write into its maps.
type Attrs struct {
	// ContentType is the media type of the content ("" when not given).
	ContentType string `json:"content_type,omitempty"`
	// Headers are standard representation headers the writer set, by
	// canonical name: Cache-Control, Content-Disposition,
	// Content-Encoding, Content-Language, Expires.
	Headers map[string]string `json:"headers,omitempty"`
	// User is the user metadata: names and values of the writer's choice
	// (S3's x-amz-meta-*, WebDAV's dead properties).
	User map[string]string `json:"user,omitempty"`
	// PartsETag is the entity tag of content assembled from parts, as the
	// face that assembled it computes it (S3's "md5-of-md5s-N"); empty:
	// the MD5 of the content is the tag.
	PartsETag string `json:"parts_etag,omitempty"`
}

// IsZero reports whether a says nothing.
func (a *Attrs) IsZero() bool {
	return a == nil || a.ContentType == "" && len(a.Headers) == 0 && len(a.User) == 0 && a.PartsETag == ""
}

// Equal reports whether a and b say the same.
func (a *Attrs) Equal(b *Attrs) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() == b.IsZero()
	}
	return a.ContentType == b.ContentType && a.PartsETag == b.PartsETag &&
		maps.Equal(a.Headers, b.Headers) && maps.Equal(a.User, b.User)
}

// Clone returns a copy whose maps may be modified.
func (a *Attrs) Clone() Attrs {
	if a == nil {
		return Attrs{}
	}
	return Attrs{ContentType: a.ContentType, Headers: maps.Clone(a.Headers), User: maps.Clone(a.User), PartsETag: a.PartsETag}
}

// Size is the number of bytes a's names and values take, the measure of
// its limit (files.MaxAttrs).
func (a *Attrs) Size() int {
	if a == nil {
		return 0
	}
	n := len(a.ContentType) + len(a.PartsETag)
	for k, v := range a.Headers {
		n += len(k) + len(v)
	}
	for k, v := range a.User {
		n += len(k) + len(v)
	}
	return n
}

// orNil returns a, or nil when it says nothing: a record keeps no empty
// Attrs, so that records with and without are told apart by nil alone.
func (a *Attrs) orNil() *Attrs {
	if a.IsZero() {
		return nil
	}
	if (a.Headers != nil && len(a.Headers) == 0) || (a.User != nil && len(a.User) == 0) {
		c := a.Clone()
		c.Headers, c.User = nilIfEmpty(c.Headers), nilIfEmpty(c.User)
		return &c
	}
	return a
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// sortedKeys returns m's keys in order (for a stable encoding).
func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
