package files

import (
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// The file API of one node (docs/architecture.md, "Files"). Every call
// keeps paper 000's guarantees: a read answers with the latest
// acknowledged version or not at all; a write is acknowledged once it is
// durable and no node can still answer for the version before.

// Info describes one version of a file: the answer to a write and a row
// of a listing.
type Info struct {
	Path    string `json:"path"`
	Version uint64 `json:"version"`
	ETag    string `json:"etag"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256,omitempty"`
	// MD5 is the hex MD5 of the content; empty for content written before
	// the catalogue kept one.
	MD5      string    `json:"md5,omitempty"`
	Modified time.Time `json:"modified"`
	// Attrs are what the writer said about the content (its fields are
	// inlined in JSON).
	Attrs
	// Created is set by Put when the path had no live file before.
	Created bool `json:"-"`
}

func infoOf(f *meta.File) Info {
	info := Info{Path: f.Path, Version: f.Version, ETag: f.ETag(), Size: f.Size, SHA256: f.Sum.String(), MD5: f.MD5.String(), Modified: f.Modified.Time()}
	if f.Attrs != nil {
		info.Attrs = f.Attrs.Clone() // the record's are shared: never written into
	}
	return info
}

// Cond is a write precondition on the current version: IfMatch (non-zero)
// requires it to be that version, IfNoneMatch requires no live file.
type Cond = meta.Cond

// MaxForwardHops bounds how many nodes a forwarded request may visit
// after the one it arrived at.
const MaxForwardHops = 2

// Forwarding is the caller's choice of what happens when another node must
// serve a request.
type Forwarding struct {
	// Forward asks this node to do the work: stream a read from a node
	// holding a valid copy, hand a write to the live holder of the write
	// right. Without it the call returns a *HeldElsewhereError.
	Forward bool
	// Hops is how many nodes the request has visited already (set by the
	// transport of a forwarded request; 0 from a client). A request is
	// forwarded only while Hops < MaxForwardHops.
	Hops int
}

func (f Forwarding) mayForward() bool { return f.Forward && f.Hops < MaxForwardHops }

// OpenOptions are the options of Open.
type OpenOptions struct {
	Forwarding
	// Offset and Length select a range (Length 0: to the end). The range
	// is clamped to the file.
	Offset, Length int64
	// Stale accepts a local copy this node cannot confirm with the
	// leader (no read lease); the copy may be old.
	Stale bool
	// Client names the reader for the "reads" resumption policy.
	Client string
	// Redirected is how many times the client was sent on to another
	// node before it reached this one (the native API's hop=N).
	Redirected int
	// Explain, when set, receives the state the read was judged on.
	Explain *Explanation
	// Probe marks a first try that the face repeats (through net/http,
	// or the main port) unless it answers from the reader itself, as the
	// client port's front and the fast lane do: the read is counted for
	// hot files (hot.go) by the repeat, or by ReadAnswered.
	Probe bool
}

// counted reports whether the read counts for hot files: once per
// client request, where the client sent it.
func (o OpenOptions) counted() bool { return !o.Probe && !o.sentHere() }

// sentHere reports whether another node sent this read here, by a
// redirect or by forwarding it.
func (o OpenOptions) sentHere() bool { return o.Redirected > 0 || o.Hops > 0 }

// Explanation is the state a read was judged on, for debugging the
// protocol (Config.Explain).
type Explanation struct {
	Judged string // applied index, fence, lease
	Record string // the catalogue record of a file found absent
}

// PutOptions are the options of Put.
type PutOptions struct {
	Forwarding
	// Size is the body's length; -1 when unknown. A body that ends before
	// Size bytes is refused with ErrTruncated.
	Size int64
	Cond Cond
	// Attrs are kept with the new version (CheckAttrs); a write without
	// them leaves the file none.
	Attrs Attrs
	// IdempotencyKey makes a retried write answer with the first
	// attempt's outcome instead of writing again (at most 128 printable
	// ASCII characters). One is generated when empty.
	IdempotencyKey string
}

// DeleteOptions are the options of Delete.
type DeleteOptions struct {
	Forwarding
	Cond           Cond
	IdempotencyKey string
}

// ListOptions select a page of a listing.
type ListOptions struct {
	Prefix    string
	Delimiter string
	// After is the cursor: the listing starts after this key (a page's
	// Next).
	After string
	// Limit is the page size (1 to 10000; 0: 1000).
	Limit int
	// Consistent catches up with the leader first, so the listing
	// includes every write acknowledged before the call.
	Consistent bool
}

// ListPage is one page of a listing.
type ListPage struct {
	Files    []Info   `json:"files"`
	Prefixes []string `json:"prefixes"`
	Next     string   `json:"next"`
}

// Status is one file's replica state (the native API's /status/files/).
type Status struct {
	*meta.File
	ETag      string   `json:"etag"`
	State     string   `json:"state"`
	Targets   []string `json:"targets"`
	LocalCopy bool     `json:"local_copy_valid"`
	// ReadOrder is the nodes with a valid copy in the order this node
	// would read from them, each with why (docs/decisions/0036).
	ReadOrder []ReadChoice `json:"read_order"`
}
