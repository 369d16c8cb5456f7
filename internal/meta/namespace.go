package meta

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A namespace is a kind of record in the replicated state, applied by the
// part registered for it. The catalogue (files, nodes, settings: Command)
// is the core namespace; every other one is a Part, with Ops of its own
// and a section of its own in the snapshot. See
// docs/decisions/0012-versioned-namespaces.md.

// NSCore is the catalogue's namespace: the commands of Command.
const NSCore = "core"

// CoreVersion is the highest version of the core commands this binary
// applies. A binary that does not advertise its versions (older than
// namespaces) supports the core at version 1 and nothing else. Version 2
// adds Commit.Take (a commit that takes the right; settled at once in a
// one-node cluster). Version 3 adds Commit.MD5 and Commit.Attrs (a
// file's content MD5 and attributes; docs/decisions/0024-file-attrs.md).
// Version 4 adds Drop.Keep (a conditional drop) and the hot.* settings
// (hot files gain replicas; docs/decisions/0039-hot-replicas.md).
// Version 5 adds Replicas and Releases (one entry for many files;
// docs/decisions/0051-replicas-and-releases-batched.md). Version 6 adds
// Settles (docs/decisions/0052-settles-batched.md). Version 7 reads
// Commit entries in binary (cmdbin.go; docs/decisions/0061-binary-commit-entries.md).
const CoreVersion = 7

// CoreBinaryCommit is the core version from which a node reads Commit
// entries in binary: the leader writes them so only while every voter
// advertises it.
const CoreBinaryCommit = 7

// More sentinel errors, for namespaces.
var (
	// ErrUnknownNamespace: a log entry names a namespace this binary has no
	// part for, or an op version above the part's. Every node refuses it
	// alike, so the replicas stay equal; the leader refuses to propose it
	// in the first place (ErrUnsupported).
	ErrUnknownNamespace = errors.New("meta: unknown namespace")
	// ErrUnsupported: a voter does not support the namespace version an op
	// needs (a mixed-version cluster during an upgrade).
	ErrUnsupported = errors.New("meta: not supported by every voter")
)

// Op is one command of a namespace other than the core. Body is the
// part's own encoding of the command (JSON by convention).
type Op struct {
	NS   string          `json:"ns"`
	V    int             `json:"v"`
	Kind string          `json:"kind"`
	Body json.RawMessage `json:"body,omitempty"`
}

// opPrefix starts an Op's log entry; a Command's starts with '{'. Older
// binaries fail to decode it and answer ErrBadCommand, alike on every node.
const opPrefix = 0x01

// Encode serialises an op for the raft log.
func (o Op) Encode() ([]byte, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	return append([]byte{opPrefix}, b...), nil
}

// isOp reports whether a log entry holds an Op.
func isOp(b []byte) bool { return len(b) > 0 && b[0] == opPrefix }

// DecodeOp parses an op's log entry.
func DecodeOp(b []byte) (Op, error) {
	var o Op
	if !isOp(b) {
		return o, fmt.Errorf("%w: not an op", ErrBadCommand)
	}
	if err := json.Unmarshal(b[1:], &o); err != nil {
		return o, fmt.Errorf("%w: %v", ErrBadCommand, err)
	}
	if o.NS == "" || o.NS == NSCore || o.V < 1 {
		return o, fmt.Errorf("%w: an op needs a namespace other than %q and a version ≥ 1", ErrBadCommand, NSCore)
	}
	return o, nil
}

// Part applies the ops of one namespace and keeps that namespace's state.
// Like State, it is deterministic and not safe for concurrent use: the
// FSM calls it under its lock. Every binary registers every part, whether
// or not the capability is switched on (a setting decides that), so that
// every node applies every entry alike.
type Part interface {
	// Namespace is the part's name: lower case, no spaces.
	Namespace() string
	// Version is the highest op version the part applies.
	Version() int
	// Apply executes one op at raft index idx. Refusals go in Result.Err.
	Apply(idx uint64, op Op) *Result
	// Snapshot returns the part's state encoded for a snapshot section,
	// nil when it holds nothing. It is called under the FSM's read lock.
	Snapshot() ([]byte, error)
	// Restore replaces the part's state with a section Snapshot wrote;
	// nil resets it to empty (the snapshot had no section for it).
	Restore(section []byte) error
}

// Supports maps namespace to the highest version a node applies. It is
// what a node advertises (in gossip) for the leader's checks.
type Supports map[string]int

// LegacySupports is what a node that advertises nothing supports: the
// core namespace at version 1.
func LegacySupports() Supports { return Supports{NSCore: 1} }

// String encodes s compactly and stably: "core:1,kv:2".
func (s Supports) String() string {
	var b strings.Builder
	for i, ns := range slices.Sorted(maps.Keys(s)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ns + ":" + strconv.Itoa(s[ns]))
	}
	return b.String()
}

// ParseSupports reads String's form; "" is LegacySupports.
func ParseSupports(v string) (Supports, error) {
	if v == "" {
		return LegacySupports(), nil
	}
	s := Supports{}
	for _, f := range strings.Split(v, ",") {
		ns, ver, ok := strings.Cut(f, ":")
		n, err := strconv.Atoi(ver)
		if !ok || ns == "" || err != nil || n < 1 {
			return nil, fmt.Errorf("supported namespaces %q: %q is not NAME:VERSION", v, f)
		}
		s[ns] = n
	}
	return s, nil
}

// CheckSupported refuses a namespace version that a voter (by ID, with
// what it advertises) does not support. A voter missing from voters is
// taken to support LegacySupports only.
func CheckSupported(ns string, version int, voters []string, supports map[string]Supports) error {
	var lacking []string
	for _, id := range voters {
		s, ok := supports[id]
		if !ok {
			s = LegacySupports()
		}
		if s[ns] < version {
			have := "none"
			if v := s[ns]; v > 0 {
				have = "v" + strconv.Itoa(v)
			}
			lacking = append(lacking, id+" ("+have+")")
		}
	}
	if len(lacking) > 0 {
		slices.Sort(lacking)
		return fmt.Errorf("%w: %s v%d is not supported by %s; upgrade every node first", ErrUnsupported, ns, version, strings.Join(lacking, ", "))
	}
	return nil
}
