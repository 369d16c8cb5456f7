package webdav

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// The WebDAV locks are records of the replicated state, the namespace
// "webdav" (decision 0012), so a lock taken through one node holds on
// every other. The part is deterministic: expiry is judged against the
// time the proposer put in each op, never the applier's clock.

// NS is the namespace of the lock records; Version the highest op
// version this binary applies.
const (
	NS      = "webdav"
	Version = 1
)

// Op kinds of the namespace.
const (
	OpLock    = "lock"
	OpRefresh = "refresh"
	OpUnlock  = "unlock"
)

// Limits that keep the records small: a lock's owner XML and the number
// of live locks.
const (
	MaxOwnerXML = 4 << 10
	MaxLocks    = 10000
)

// Errors of the lock records (matched with errors.Is; each crosses the
// wire as the meta kind named beside it).
var (
	// ErrLocked: the resource (or an ancestor or descendant the lock's
	// depth covers) is locked already (meta.ErrPrecondition).
	ErrLocked = errors.New("webdav: locked")
	// ErrNoSuchLock: no live lock has the token (meta.ErrNotFound).
	ErrNoSuchLock = errors.New("webdav: no such lock")
)

// Lock is one WebDAV lock held in the cluster.
type Lock struct {
	Token string `json:"token"`
	// Root is the locked resource ("/a/b", "/" for the root).
	Root string `json:"root"`
	// ZeroDepth locks Root only; otherwise Root and everything below it.
	ZeroDepth bool   `json:"zero_depth,omitempty"`
	OwnerXML  string `json:"owner,omitempty"`
	// Duration is the timeout the client asked for (negative: infinite);
	// Expires the proposer's time plus it (zero: never).
	Duration time.Duration `json:"duration"`
	Expires  time.Time     `json:"expires,omitzero"`
	// User is who took the lock.
	User string `json:"user,omitempty"`
}

// live reports whether the lock still holds at now.
func (l *Lock) live(now time.Time) bool { return l.Expires.IsZero() || now.Before(l.Expires) }

// covers reports whether the lock covers the resource name.
func (l *Lock) covers(name string) bool {
	if name == l.Root {
		return true
	}
	return !l.ZeroDepth && within(name, l.Root)
}

// within reports whether name lies strictly below dir.
func within(name, dir string) bool {
	return dir == "/" && name != "/" || strings.HasPrefix(name, dir+"/")
}

// lockBody is the body of the three ops.
type lockBody struct {
	Lock  *Lock         `json:"lock,omitempty"`  // OpLock
	Token string        `json:"token,omitempty"` // OpRefresh, OpUnlock
	For   time.Duration `json:"for,omitempty"`   // OpRefresh
	Now   time.Time     `json:"now"`
}

// LockPart is the namespace's state: the live locks by token.
type LockPart struct {
	locks map[string]*Lock
}

// NewLockPart returns an empty part.
func NewLockPart() *LockPart { return &LockPart{locks: map[string]*Lock{}} }

// Namespace implements meta.Part.
func (p *LockPart) Namespace() string { return NS }

// Version implements meta.Part.
func (p *LockPart) Version() int { return Version }

// Apply implements meta.Part.
func (p *LockPart) Apply(_ uint64, o meta.Op) *meta.Result {
	var b lockBody
	if err := json.Unmarshal(o.Body, &b); err != nil {
		return &meta.Result{Err: fmt.Errorf("%w: %s: %v", meta.ErrBadCommand, o.Kind, err)}
	}
	p.expire(b.Now)
	l, err := p.apply(o.Kind, b)
	if err != nil {
		return &meta.Result{Err: fmt.Errorf("%s: %w", o.Kind, wireKind(err))}
	}
	data, _ := json.Marshal(l)
	return &meta.Result{Data: data}
}

func (p *LockPart) apply(kind string, b lockBody) (*Lock, error) {
	switch kind {
	case OpLock:
		l := b.Lock
		switch {
		case l == nil || l.Token == "" || !strings.HasPrefix(l.Root, "/"):
			return nil, fmt.Errorf("%w: a lock needs a token and a root", meta.ErrBadCommand)
		case len(l.OwnerXML) > MaxOwnerXML:
			return nil, fmt.Errorf("%w: the lock's owner is larger than %d bytes", meta.ErrBadCommand, MaxOwnerXML)
		case len(p.locks) >= MaxLocks:
			return nil, fmt.Errorf("%w: %d locks are held already; unlock some first", ErrLocked, MaxLocks)
		case p.locks[l.Token] != nil:
			return nil, fmt.Errorf("%w: token %s is in use", meta.ErrBadCommand, l.Token)
		}
		if c := p.conflict(l.Root, l.ZeroDepth); c != nil {
			return nil, fmt.Errorf("%w: %s by %s", ErrLocked, c.Root, c.Token)
		}
		l.Expires = expiry(b.Now, l.Duration)
		p.locks[l.Token] = l
		return l, nil
	case OpRefresh:
		old := p.locks[b.Token]
		if old == nil {
			return nil, fmt.Errorf("%w: %s", ErrNoSuchLock, b.Token)
		}
		l := *old
		l.Duration, l.Expires = b.For, expiry(b.Now, b.For)
		p.locks[b.Token] = &l
		return &l, nil
	case OpUnlock:
		l := p.locks[b.Token]
		if l == nil {
			return nil, fmt.Errorf("%w: %s", ErrNoSuchLock, b.Token)
		}
		delete(p.locks, b.Token)
		return l, nil
	}
	return nil, fmt.Errorf("%w: webdav has no op %q", meta.ErrBadCommand, kind)
}

func expiry(now time.Time, d time.Duration) time.Time {
	if d < 0 {
		return time.Time{}
	}
	return now.Add(d)
}

// expire drops the locks that expired at now.
func (p *LockPart) expire(now time.Time) {
	for tok, l := range p.locks {
		if !l.live(now) {
			delete(p.locks, tok)
		}
	}
}

// conflict returns a lock that keeps a new lock on root from being taken:
// one on root itself, one on an ancestor with infinite depth, or (for an
// infinite-depth request) one below root. All locks are exclusive.
func (p *LockPart) conflict(root string, zeroDepth bool) *Lock {
	for _, tok := range slices.Sorted(maps.Keys(p.locks)) {
		l := p.locks[tok]
		if l.covers(root) || !zeroDepth && within(l.Root, root) {
			return l
		}
	}
	return nil
}

// Get returns the live lock with the token at now (nil if none). Call it
// under the FSM's read lock (FSM.ReadPart).
func (p *LockPart) Get(token string, now time.Time) *Lock {
	if l := p.locks[token]; l != nil && l.live(now) {
		return l
	}
	return nil
}

// Blocking returns a live lock at now that a write to name (and, with
// deep, to everything below it) would break, nil if none.
func (p *LockPart) Blocking(name string, deep bool, now time.Time) *Lock {
	for _, tok := range slices.Sorted(maps.Keys(p.locks)) {
		l := p.locks[tok]
		if l.live(now) && (l.covers(name) || deep && within(l.Root, name)) {
			return l
		}
	}
	return nil
}

// Len is the number of records (live or not yet dropped).
func (p *LockPart) Len() int { return len(p.locks) }

// Snapshot implements meta.Part: nil while no lock is held, so that a
// cluster without WebDAV locks writes snapshots older binaries read.
func (p *LockPart) Snapshot() ([]byte, error) {
	if len(p.locks) == 0 {
		return nil, nil
	}
	all := make([]*Lock, 0, len(p.locks))
	for _, tok := range slices.Sorted(maps.Keys(p.locks)) {
		all = append(all, p.locks[tok])
	}
	return json.Marshal(all)
}

// Restore implements meta.Part.
func (p *LockPart) Restore(b []byte) error {
	fresh := map[string]*Lock{}
	if b != nil {
		var all []*Lock
		if err := json.Unmarshal(b, &all); err != nil {
			return fmt.Errorf("webdav locks: %w", err)
		}
		for _, l := range all {
			fresh[l.Token] = l
		}
	}
	p.locks = fresh
	return nil
}

// wireKind adds the meta sentinel that carries err's kind to a proposer
// on another node (meta.Result keeps meta's kinds only).
func wireKind(err error) error {
	switch {
	case errors.Is(err, ErrLocked):
		return fmt.Errorf("%w%w", err, quiet{meta.ErrPrecondition})
	case errors.Is(err, ErrNoSuchLock):
		return fmt.Errorf("%w%w", err, quiet{meta.ErrNotFound})
	}
	return err
}

// quiet wraps a sentinel without adding its text.
type quiet struct{ err error }

func (q quiet) Error() string { return "" }
func (q quiet) Unwrap() error { return q.err }
