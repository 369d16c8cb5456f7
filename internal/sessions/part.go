package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// NS is the sessions' namespace in the replicated state; Version the
// highest op version this binary applies (docs/decisions/0012).
//
// Version 2 (decision 0045) adds a session's command and the hash of its
// credential to add and set; ops without them are still version 1.
const (
	NS      = "sessions"
	Version = 2
)

// Op kinds of the sessions namespace.
const (
	OpAdd    = "add"
	OpSet    = "set"
	OpDelete = "delete"
)

// States of a session record.
const (
	// StateRunning: its holder runs on Node.
	StateRunning = "running"
	// StateStarting: Node is starting it (a new session, recorded before
	// its holder starts, or a restart elsewhere).
	StateStarting = "starting"
	// StateLost: its node died, or its holder was gone when the node came
	// back; only kill removes it.
	StateLost = "lost"
)

// Session is a session's record in the replicated state: every node
// knows where each session lives.
type Session struct {
	ID       string    `json:"id"`
	User     string    `json:"user"`
	Kind     string    `json:"kind"`
	Node     string    `json:"node"`
	State    string    `json:"state"`
	Created  time.Time `json:"created"`
	Restarts int       `json:"restarts,omitempty"`
	// Placement is why the session went to Node (nil: asked of it by
	// name, or started before placement was recorded).
	Placement *Placement `json:"placement,omitempty"`
	// Parent is the session this one was started from (paper 004's
	// application session, started from a desktop session): it ends when
	// its parent ends ("": none).
	Parent string `json:"parent,omitempty"`
	// Command is the program asked for (`mure run -- CMD`) in a kind that
	// runs what the user asks (a shell kind without a command of its
	// own); empty: the kind's.
	Command []string `json:"command,omitempty"`
	// CredentialHash is the SHA-256 of the session's credential (see
	// credential.go); the credential itself is never stored.
	CredentialHash string `json:"credential_hash,omitempty"`
}

// Move is a change of a session's node or state.
type Move struct {
	ID    string `json:"id"`
	Node  string `json:"node"`
	State string `json:"state"`
	// Restarted counts one more restart.
	Restarted bool `json:"restarted,omitempty"`
	// CredentialHash, when set, replaces the session's (a restart makes
	// a new credential).
	CredentialHash string `json:"credential_hash,omitempty"`
}

func op(kind string, v int, body any) meta.Op {
	b, _ := json.Marshal(body) // plain structs: Marshal does not fail
	return meta.Op{NS: NS, V: v, Kind: kind, Body: b}
}

// AddOp records a new session; it fails if the ID is taken.
func AddOp(s Session) meta.Op {
	v := 1
	if s.CredentialHash != "" || len(s.Command) > 0 {
		v = 2
	}
	return op(OpAdd, v, s)
}

// SetOp changes a session's node or state.
func SetOp(m Move) meta.Op {
	v := 1
	if m.CredentialHash != "" {
		v = 2
	}
	return op(OpSet, v, m)
}

// DeleteOp removes a session's record.
func DeleteOp(id string) meta.Op { return op(OpDelete, 1, Session{ID: id}) }

// Part is the sessions' records; like every meta.Part it is deterministic
// and used under the FSM's lock (FSM.ReadPart to read).
type Part struct {
	byID map[string]*Session
}

// NewPart returns an empty part.
func NewPart() *Part { return &Part{byID: map[string]*Session{}} }

// Namespace implements meta.Part.
func (p *Part) Namespace() string { return NS }

// Version implements meta.Part.
func (p *Part) Version() int { return Version }

// Apply implements meta.Part.
func (p *Part) Apply(_ uint64, o meta.Op) *meta.Result {
	if err := p.apply(o); err != nil {
		return &meta.Result{Err: fmt.Errorf("sessions %s: %w", o.Kind, err)}
	}
	return &meta.Result{}
}

func (p *Part) apply(o meta.Op) error {
	var s Move
	var rec Session
	var err error
	if o.Kind == OpSet {
		err = json.Unmarshal(o.Body, &s)
	} else {
		err = json.Unmarshal(o.Body, &rec)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", meta.ErrBadCommand, err)
	}
	switch o.Kind {
	case OpAdd:
		if rec.ID == "" || rec.User == "" || rec.Node == "" || rec.Kind == "" {
			return fmt.Errorf("%w: a session needs an id, a user, a kind and a node", meta.ErrBadCommand)
		}
		if old, ok := p.byID[rec.ID]; ok {
			if reflect.DeepEqual(*old, rec) {
				return nil // the same op again (a forwarded proposal retried): done already
			}
			return fmt.Errorf("%w: session %s exists", meta.ErrPrecondition, rec.ID)
		}
		p.byID[rec.ID] = &rec
	case OpSet:
		old, ok := p.byID[s.ID]
		if !ok {
			return fmt.Errorf("%w: session %s", meta.ErrNotFound, s.ID)
		}
		n := *old
		n.Node, n.State = s.Node, s.State
		if s.Restarted {
			n.Restarts++
		}
		if s.CredentialHash != "" {
			n.CredentialHash = s.CredentialHash
		}
		p.byID[s.ID] = &n
	case OpDelete:
		if _, ok := p.byID[rec.ID]; !ok {
			return fmt.Errorf("%w: session %s", meta.ErrNotFound, rec.ID)
		}
		delete(p.byID, rec.ID)
	default:
		return fmt.Errorf("%w: sessions has no op %q", meta.ErrBadCommand, o.Kind)
	}
	return nil
}

// Get returns a session's record.
func (p *Part) Get(id string) (Session, bool) {
	s, ok := p.byID[id]
	if !ok {
		return Session{}, false
	}
	return *s, true
}

// All returns every record, by ID.
func (p *Part) All() []Session {
	out := make([]Session, 0, len(p.byID))
	for _, id := range slices.Sorted(maps.Keys(p.byID)) {
		out = append(out, *p.byID[id])
	}
	return out
}

// Snapshot implements meta.Part.
func (p *Part) Snapshot() ([]byte, error) {
	if len(p.byID) == 0 {
		return nil, nil
	}
	return json.Marshal(p.All())
}

// Restore implements meta.Part.
func (p *Part) Restore(section []byte) error {
	p.byID = map[string]*Session{}
	if section == nil {
		return nil
	}
	var all []Session
	if err := json.Unmarshal(section, &all); err != nil {
		return fmt.Errorf("sessions snapshot: %w", err)
	}
	for i := range all {
		p.byID[all[i].ID] = &all[i]
	}
	return nil
}

// Read returns the records in fsm (none if the part is not registered).
func Read(fsm *meta.FSM) (all []Session) {
	fsm.ReadPart(NS, func(mp meta.Part) { all = mp.(*Part).All() })
	return all
}

// Lookup returns one record in fsm.
func Lookup(fsm *meta.FSM, id string) (s Session, ok bool) {
	fsm.ReadPart(NS, func(mp meta.Part) { s, ok = mp.(*Part).Get(id) })
	return s, ok
}

// isNotFound: the record was already gone (meta's kinds cross nodes with
// a forwarded proposal's result).
func isNotFound(err error) bool { return errors.Is(err, meta.ErrNotFound) }
