package webdav

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	xdav "golang.org/x/net/webdav"

	"github.com/mure-dev/mure/internal/meta"
)

// Seat is what the locks need of the node's cluster seat: propose an op,
// read the namespace's part, catch up with the leader.
type Seat interface {
	ApplyOp(ctx context.Context, op meta.Op) (*meta.Result, error)
	ReadPart(ns string, fn func(p meta.Part)) bool
	CatchUp(ctx context.Context) error
}

// lockTimeout bounds each raft round trip of a lock operation (the
// webdav.LockSystem interface carries no context).
const lockTimeout = 10 * time.Second

// tempPrefix marks the tokens of the locks x/net/webdav takes for the
// length of one request without an If header: they exclude nothing but
// the cluster's locks, so they are checked, not recorded.
const tempPrefix = "mure-request:"

// Locks is the node's side of the cluster's WebDAV locks: LOCK, refresh
// and UNLOCK are raft entries; the check a write makes reads this node's
// state after catching up with the leader, so a lock taken through any
// node is seen. Which locks a request on this node is using right now
// (webdav's "held") is local.
type Locks struct {
	seat Seat
	mu   sync.Mutex
	held map[string]bool
}

// NewLocks returns the locks over seat.
func NewLocks(seat Seat) *Locks { return &Locks{seat: seat, held: map[string]bool{}} }

// forRequest is the webdav.LockSystem of one request: a Create is a
// client's LOCK only when the request is a LOCK; otherwise it is
// x/net/webdav's lock for the length of the request.
func (l *Locks) forRequest(method, user string) xdav.LockSystem {
	return &requestLocks{Locks: l, lock: method == "LOCK", user: user}
}

type requestLocks struct {
	*Locks
	lock bool
	user string
}

func (l *Locks) read(fn func(p *LockPart)) {
	l.seat.ReadPart(NS, func(mp meta.Part) { fn(mp.(*LockPart)) })
}

// catchUp waits until this node's state is as new as the leader's,
// riding out a leader election (up to electionWait).
func (l *Locks) catchUp() error {
	ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
	defer cancel()
	err := ridingElections(ctx, func() error { return l.seat.CatchUp(ctx) })
	if err != nil {
		return fmt.Errorf("%w: the WebDAV locks cannot catch up with the cluster's leader: %w", ErrNoQuorum, err)
	}
	return nil
}

// electionWait is how long a call that needs the leader is retried while
// there is none: longer than an election (decision 0017), short enough
// for a client that waits for its answer.
const electionWait = 3 * time.Second

// ridingElections calls fn until it succeeds or electionWait passed.
func ridingElections(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(electionWait)
	wait := 50 * time.Millisecond
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// propose commits one op and returns the lock it answered.
func (l *Locks) propose(kind string, b lockBody) (*Lock, error) {
	body, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
	defer cancel()
	res, err := l.seat.ApplyOp(ctx, meta.Op{NS: NS, V: Version, Kind: kind, Body: body})
	if err != nil {
		return nil, fmt.Errorf("%w: webdav lock %s: %w", ErrNoQuorum, kind, err)
	}
	switch {
	case res.Err == nil:
	case errors.Is(res.Err, ErrLocked), errors.Is(res.Err, meta.ErrPrecondition):
		return nil, xdav.ErrLocked
	case errors.Is(res.Err, ErrNoSuchLock), errors.Is(res.Err, meta.ErrNotFound):
		return nil, xdav.ErrNoSuchLock
	default:
		return nil, res.Err
	}
	var out Lock
	if err := json.Unmarshal(res.Data, &out); err != nil {
		return nil, fmt.Errorf("webdav lock %s: answer: %w", kind, err)
	}
	return &out, nil
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return "opaquelocktoken:" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Create takes a client's lock in the cluster (LOCK), or checks that no
// cluster lock stands in the way of this request's write.
func (r *requestLocks) Create(now time.Time, d xdav.LockDetails) (string, error) {
	root := slashClean(d.Root)
	if !r.lock {
		if err := r.catchUp(); err != nil {
			return "", err
		}
		var b *Lock
		r.read(func(p *LockPart) { b = p.Blocking(root, !d.ZeroDepth, now) })
		if b != nil {
			return "", xdav.ErrLocked
		}
		return tempPrefix + newToken(), nil
	}
	l := &Lock{Token: newToken(), Root: root, ZeroDepth: d.ZeroDepth, OwnerXML: d.OwnerXML, Duration: d.Duration, User: r.user}
	got, err := r.propose(OpLock, lockBody{Lock: l, Now: now})
	if err != nil {
		return "", err
	}
	return got.Token, nil
}

// Confirm checks that the conditions name live locks covering name0 and
// name1 that no other request on this node is using, and holds them
// until release.
func (r *requestLocks) Confirm(now time.Time, name0, name1 string, conds ...xdav.Condition) (func(), error) {
	tokens, ok := r.confirm(now, name0, name1, conds)
	if !ok {
		// A lock taken through another node a moment ago may not be
		// applied here yet.
		if err := r.catchUp(); err != nil {
			return nil, err
		}
		if tokens, ok = r.confirm(now, name0, name1, conds); !ok {
			return nil, xdav.ErrConfirmationFailed
		}
	}
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, t := range tokens {
			delete(r.held, t)
		}
	}, nil
}

func (r *requestLocks) confirm(now time.Time, name0, name1 string, conds []xdav.Condition) ([]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var tokens []string
	for i, name := range []string{name0, name1} {
		if name == "" {
			continue
		}
		t := r.lookup(slashClean(name), now, conds)
		if t == "" && i == 1 && r.free(slashClean(name), now) {
			// A COPY's or MOVE's destination that no lock covers needs
			// no token (x/net/webdav's own locks ask for one, which
			// fails davfs2's MOVE of a file it has locked).
			continue
		}
		if t == "" {
			return nil, false
		}
		if len(tokens) == 0 || tokens[0] != t {
			tokens = append(tokens, t)
		}
	}
	for _, t := range tokens {
		r.held[t] = true
	}
	return tokens, true
}

// free reports whether no live lock covers name or anything below it.
func (r *requestLocks) free(name string, now time.Time) (ok bool) {
	r.read(func(p *LockPart) { ok = p.Blocking(name, true, now) == nil })
	return ok
}

// lookup returns the token of a condition whose lock covers name and is
// not held (called with mu held).
func (r *requestLocks) lookup(name string, now time.Time, conds []xdav.Condition) (tok string) {
	r.read(func(p *LockPart) {
		for _, c := range conds {
			l := p.Get(c.Token, now)
			if l == nil || r.held[c.Token] || !l.covers(name) {
				continue
			}
			tok = c.Token
			return
		}
	})
	return tok
}

func (r *requestLocks) isHeld(token string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held[token]
}

// Refresh sets a lock's timeout anew.
func (r *requestLocks) Refresh(now time.Time, token string, d time.Duration) (xdav.LockDetails, error) {
	if r.isHeld(token) {
		return xdav.LockDetails{}, xdav.ErrLocked
	}
	l, err := r.propose(OpRefresh, lockBody{Token: token, For: d, Now: now})
	if err != nil {
		return xdav.LockDetails{}, err
	}
	return xdav.LockDetails{Root: l.Root, Duration: l.Duration, OwnerXML: l.OwnerXML, ZeroDepth: l.ZeroDepth}, nil
}

// Unlock removes a lock from the cluster.
func (r *requestLocks) Unlock(now time.Time, token string) error {
	if strings.HasPrefix(token, tempPrefix) {
		return nil
	}
	if r.isHeld(token) {
		return xdav.ErrLocked
	}
	_, err := r.propose(OpUnlock, lockBody{Token: token, Now: now})
	return err
}
