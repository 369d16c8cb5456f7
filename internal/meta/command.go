package meta

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors returned in Result.Err. They describe a decision of the
// state machine, not a failure of it.
var (
	// ErrHeld: another node holds the path's write right (Result.File.Holder).
	ErrHeld = errors.New("meta: write right held by another node")
	// ErrNotHolder: a Commit or Release presented a right it does not hold
	// (it was taken over, or never granted).
	ErrNotHolder = errors.New("meta: not the holder of the write right")
	// ErrPrecondition: If-Match / If-None-Match did not hold.
	ErrPrecondition = errors.New("meta: precondition failed")
	// ErrNotFound: the path does not exist (or is deleted).
	ErrNotFound = errors.New("meta: file not found")
	// ErrStale: a Replica report named a version that is no longer current.
	ErrStale = errors.New("meta: stale version")
	// ErrBadCommand: the command could not be decoded or is invalid.
	ErrBadCommand = errors.New("meta: bad command")
	// ErrUnknownNode: the command names a node the cluster does not know.
	ErrUnknownNode = errors.New("meta: unknown node")
	// ErrKeep: a Drop with Keep would leave fewer valid copies on active
	// nodes than it asked to keep (core v4).
	ErrKeep = errors.New("meta: would leave fewer copies than asked to keep")
)

// Kind names a command.
type Kind string

// The commands of the state machine.
const (
	KindAcquire    Kind = "acquire"
	KindCommit     Kind = "commit"
	KindRelease    Kind = "release"
	KindReplica    Kind = "replica"
	KindDelete     Kind = "delete"
	KindSettle     Kind = "settle"
	KindSetConfig  Kind = "set_config"
	KindNodeUpsert Kind = "node_upsert"
	KindNodeRemove Kind = "node_remove"
)

// KindReplicas and KindReleases (core v5) are Replica and Release for
// many files in one entry (Items): a node reports the copies it fetched,
// or releases the rights that fell due, together. Each item is applied
// exactly as its own command would be, in order; an item's refusal
// (ErrStale, ErrNotHolder...) does not affect the others: the batch's
// Result lists the refused items (Refused) and has no File, and no Err of
// its own unless the command itself is malformed (docs/decisions/0051-replicas-and-releases-batched.md).
const (
	KindReplicas Kind = "replicas"
	KindReleases Kind = "releases"
)

// KindSettles (core v6) is Settle for many versions in one entry (Items:
// Path and Version), proposed by the leader for the writes whose
// barriers ended together; each item is applied as its own Settle would
// be (docs/decisions/0052-settles-batched.md).
const KindSettles Kind = "settles"

// MaxItems bounds a batch command's Items.
const MaxItems = 256

// Item is one file of a batch command: Path with Version (Replicas,
// Settles) or Grant (Releases).
type Item struct {
	Path    string `json:"path"`
	Version uint64 `json:"version,omitempty"`
	Grant   uint64 `json:"grant,omitempty"`
}

// KindDrop reports that Node no longer holds a valid copy of Version (it
// failed a checksum check and was quarantined, or is missing): the
// opposite of KindReplica.
const KindDrop Kind = "drop"

// Cond is a write precondition, checked against the current version.
type Cond struct {
	// IfMatch, when non-zero, requires the current live version to equal it.
	IfMatch uint64 `json:"if_match,omitempty"`
	// IfNoneMatch requires the path not to exist (create only).
	IfNoneMatch bool `json:"if_none_match,omitempty"`
}

// Check reports whether the condition holds for f (ErrPrecondition if not).
func (c Cond) Check(f *File) error {
	if c.IfNoneMatch && f.Exists() {
		return fmt.Errorf("%w: %s exists", ErrPrecondition, f.Path)
	}
	if c.IfMatch != 0 && (!f.Exists() || f.Version != c.IfMatch) {
		return fmt.Errorf("%w: %s is not at version %s", ErrPrecondition, f.Path, ETagOf(c.IfMatch))
	}
	return nil
}

// Command is one entry of the replicated log. Fields are used according to
// Kind; unused ones stay empty.
type Command struct {
	Kind Kind   `json:"kind"`
	Path string `json:"path,omitempty"`
	// Node is the node issuing the command (writer, replica, ...).
	Node string `json:"node,omitempty"`
	// Grant is the fencing token of a Commit or Release.
	Grant uint64 `json:"grant,omitempty"`
	// Force lets Acquire take the right from a holder the leader has
	// found dead.
	Force bool `json:"force,omitempty"`
	// Take makes a Commit take the write right too, when nobody holds it
	// (core v2): one entry instead of Acquire then Commit. Grant is then
	// unused; the right's token is the commit's index.
	Take bool `json:"take,omitempty"`
	// Version names the version a Replica report or Release is about.
	Version uint64 `json:"version,omitempty"`
	BlobID  string `json:"blob_id,omitempty"`
	Size    int64  `json:"size,omitempty"`
	Sum     string `json:"sha256,omitempty"`
	// MD5 and Attrs are a Commit's content MD5 and attributes (core v3).
	MD5   string    `json:"md5,omitempty"`
	Attrs *Attrs    `json:"attrs,omitempty"`
	Time  time.Time `json:"time,omitempty"`
	// Keep makes a Drop conditional (core v4): it is refused (ErrKeep)
	// unless at least Keep valid copies on active nodes remain without
	// Node's. A hot file's extra copy is dropped so (decision 0039):
	// never below the replication count, whatever else drops at once.
	Keep int `json:"keep,omitempty"`
	// Standby lists the extra nodes that durably hold the committed blob.
	Standby []string `json:"standby,omitempty"`
	// Items are the files of a Replicas or Releases (core v5) or Settles
	// (core v6) command.
	Items []Item `json:"items,omitempty"`
	Cond  Cond   `json:"cond,omitempty"`
	Idem  string `json:"idem,omitempty"`
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
	Info  *Node  `json:"info,omitempty"`
}

// Encode serialises a command for the raft log, in JSON (every core
// version reads it; EncodeBinary is a Commit's shorter form).
func (c Command) Encode() ([]byte, error) { return json.Marshal(c) }

// DecodeCommand parses a raft log entry: JSON, or a Commit in binary
// (EncodeBinary).
func DecodeCommand(b []byte) (Command, error) {
	var c Command
	if len(b) > 0 && b[0] == binTag {
		var err error
		if c, err = decodeBinary(b); err != nil {
			return c, err
		}
	} else if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%w: %v", ErrBadCommand, err)
	}
	// Times are instants: keep them in UTC. (encoding/json accepts zone
	// offsets such as +24:00 that it then refuses to encode, go.dev/issue/54580,
	// which would make a decoded command impossible to log or snapshot.)
	c.Time = c.Time.UTC()
	if c.Info != nil {
		c.Info.Since = c.Info.Since.UTC()
	}
	return c, nil
}

// Result is what applying a command produced.
type Result struct {
	// Index is the raft index the command was applied at.
	Index uint64 `json:"index"`
	// File is the record after the command (nil for non-file commands).
	File *File `json:"file,omitempty"`
	// Invalidated lists nodes whose copy of File.Path stopped being valid.
	// The leader must make that effective (acknowledgement or lease
	// expiry) before answering the proposer.
	Invalidated []string `json:"invalidated,omitempty"`
	// Duplicate is set when an idempotency key matched an earlier write;
	// Version is then the version that write produced.
	Duplicate bool   `json:"duplicate,omitempty"`
	Version   uint64 `json:"version,omitempty"`
	// Refused lists, for a batch command (Replicas, Releases, Settles),
	// the indices of the items refused (stale, not the holder...), which
	// changed nothing.
	Refused []int `json:"refused,omitempty"`
	// Data is a part's answer to an op, in the part's own encoding (nil
	// for core commands); it crosses the wire as it is.
	Data json.RawMessage `json:"data,omitempty"`
	// Err is the state machine's decision when the command was refused.
	Err error `json:"-"`
	// ErrMsg carries Err across the wire; see Error().
	ErrMsg  string `json:"err,omitempty"`
	ErrKind string `json:"err_kind,omitempty"`
}

var errKinds = map[string]error{
	"held": ErrHeld, "not_holder": ErrNotHolder, "precondition": ErrPrecondition,
	"not_found": ErrNotFound, "stale": ErrStale, "bad_command": ErrBadCommand,
	"unknown_node": ErrUnknownNode, "keep": ErrKeep, "unknown_namespace": ErrUnknownNamespace, "unsupported": ErrUnsupported,
}

// Wire prepares a result for sending to another node.
func (r *Result) Wire() *Result {
	if r.Err != nil {
		r.ErrMsg = r.Err.Error()
		for k, e := range errKinds {
			if errors.Is(r.Err, e) {
				r.ErrKind = k
			}
		}
	}
	return r
}

// Unwire restores Err after a result crossed the wire.
func (r *Result) Unwire() *Result {
	if r.ErrMsg != "" {
		if e, ok := errKinds[r.ErrKind]; ok {
			r.Err = &wireErr{msg: r.ErrMsg, kind: e}
		} else {
			r.Err = errors.New(r.ErrMsg)
		}
	}
	return r
}

type wireErr struct {
	msg  string
	kind error
}

func (e *wireErr) Error() string { return e.msg }
func (e *wireErr) Unwrap() error { return e.kind }
