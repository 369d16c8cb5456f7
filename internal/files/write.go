package files

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
)

// Put writes body as the new content of path (docs/protocol.md, "Write").
// It takes the file's write right from the serializer (or uses the one
// this node holds), stores the body, pushes a standby copy for
// durability, and commits; it returns once every node that could still
// answer for the previous version has been fenced. The body is not read
// before the node knows it will take the write: when another live node
// holds the right, Put returns a *HeldElsewhereError, or, with o.Forward,
// hands the write to that node.
func (s *Service) Put(ctx context.Context, path string, body io.Reader, o PutOptions) (Info, error) {
	if err := checkWrite(path, o.IdempotencyKey); err != nil {
		return Info{}, err
	}
	if o.Size > s.cfg.MaxBody {
		return Info{}, &TooLargeError{Size: o.Size, Limit: s.cfg.MaxBody}
	}
	if err := CheckAttrs(o.Attrs); err != nil {
		return Info{}, err
	}
	cur := s.fsm.File(path)
	if v, ok := s.idemDone(meta.KindCommit, path, o.IdempotencyKey); ok {
		return s.settledDuplicate(ctx, path, v) // a retry of a write that succeeded
	}
	if s.heldByOther(cur) {
		return s.putElsewhere(ctx, path, cur.Holder, body, o)
	}
	// WriteTimeout bounds the cluster's round trips, not the body's
	// arrival: taking the right and, once the body is stored, pushing and
	// committing it (afterBody) get deadlines of their own; a forward
	// streams the body under the caller's.
	parent := ctx
	if s.mayTake(cur) {
		// One key for both ways: a take whose answer was lost and the
		// classic write after it are one write to the state machine.
		o.IdempotencyKey = idemOrRandom(o.IdempotencyKey)
		info, stored, done, err := s.putTaking(parent, path, cur, body, o)
		if done {
			return info, err
		}
		defer stored.Close()
		body, cur = stored, s.fsm.File(path)
		if s.heldByOther(cur) {
			return s.putElsewhere(parent, path, cur.Holder, body, o)
		}
	}
	ctx, cancel := context.WithTimeout(parent, s.cfg.WriteTimeout)
	defer cancel()
	grant, heldBefore, err := s.takeRight(ctx, path, cur)
	if err != nil {
		return Info{}, errNoQuorum("take the write right of "+path, err)
	}
	if errors.Is(grant.Err, meta.ErrHeld) {
		return s.putElsewhere(parent, path, grant.File.Holder, body, o)
	}
	if grant.Err != nil {
		return Info{}, s.stateError(ctx, path, grant.Err)
	}
	defer s.resumer.end(path, grant.File.Grant)
	release := func() {
		if !heldBefore {
			s.resumer.releaseNow(path, grant.File.Grant)
		}
	}
	// The condition is checked before the body is read only on a view known
	// to be current: after a fresh Acquire (this node has applied everything
	// up to it). A holder's own view may lag behind a write of its own that
	// others already see; the state machine checks again at commit anyway.
	if err := o.Cond.Check(grant.File); err != nil && !heldBefore {
		release()
		return Info{}, s.stateError(ctx, path, err)
	}
	blob, md5, err := s.receive(path, body, o.Size)
	if err != nil {
		release()
		return Info{}, s.bodyError(err)
	}
	ctx, cancelAfter := s.afterBody(parent, blob.Size)
	defer cancelAfter()
	standby, err := s.pushStandby(ctx, path, blob)
	if err != nil {
		release()
		s.st.Remove(path, blob.ID)
		return Info{}, unavailable(ErrUnavailable, err, "the write could not be made durable on a second node: "+err.Error()+" (or set durability=local)")
	}
	res, err := s.applyCommit(ctx, meta.Command{
		Kind: meta.KindCommit, Path: path, Node: s.self, Grant: grant.File.Grant,
		BlobID: blob.ID, Size: blob.Size, Sum: blob.Sum, MD5: md5, Attrs: attrsRef(o.Attrs), Standby: standby,
		Cond: o.Cond, Idem: idemOrRandom(o.IdempotencyKey),
	})
	if err != nil {
		return Info{}, commitError(path, err)
	}
	// The blob stays protected until this node has applied the commit, not
	// at the decision: the resumption worker may hold a view of the path
	// from before, and would remove the blob as unneeded (TestLitmus's
	// COPY then MOVE met "no valid copy"); a delete soon after is
	// collected once the protection ends (replicateLoop's later).
	if res.Err != nil {
		s.st.Remove(path, blob.ID)
		return Info{}, s.stateError(ctx, path, res.Err)
	}
	if res.Duplicate {
		s.dropUnlessCommitted(path, blob, res)
		return duplicate(res.File, res.Version), nil
	}
	s.protect.committed(path, blob.ID, res.Index)
	s.metrics.writes.Inc()
	s.metrics.bytesIn.Add(float64(blob.Size))
	s.resumer.written(path, res.File.Grant)
	info := infoOf(res.File)
	info.Created = !grant.File.Exists()
	return info, nil
}

// checkWrite checks a write's path and idempotency key.
func checkWrite(path, idem string) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	if len(idem) > 128 || strings.ContainsFunc(idem, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		return kindErr(ErrBadRequest, nil, "Idempotency-Key must be at most 128 printable ASCII characters without spaces")
	}
	return nil
}

// heldByOther reports whether another live node holds cur's write right
// (the write goes there).
func (s *Service) heldByOther(cur *meta.File) bool {
	return cur != nil && cur.Holder != "" && cur.Holder != s.self && s.cl.Alive(cur.Holder)
}

// idemDone reports whether a write with this idempotency key to path was
// already applied, and the version it produced.
func (s *Service) idemDone(kind meta.Kind, path, key string) (uint64, bool) {
	if key == "" {
		return 0, false
	}
	var rec meta.IdemRecord
	var ok bool
	s.fsm.Read(func(st *meta.State) { rec, ok = st.Idem(key) })
	return rec.Version, ok && rec.Path == path && rec.Kind == kind
}

// duplicate is the answer to a retried write: the outcome of the first
// attempt, the version it produced (the file may have changed since).
func duplicate(cur *meta.File, version uint64) Info {
	info := Info{Version: version, ETag: meta.ETagOf(version)}
	if cur != nil && cur.Version == version {
		info = infoOf(cur)
	} else if cur != nil {
		info.Path = cur.Path
	}
	return info
}

// dropUnlessCommitted removes blob, stored for a commit the state machine
// answered as a duplicate, unless that commit may be the one that
// committed it: the cluster re-sends a commit whose answer was lost, with
// the same blob, and the duplicate's version is then this blob (with
// durability=local, its only copy). A blob of a version already replaced
// may be either; garbage collection takes it once no version needs it.
func (s *Service) dropUnlessCommitted(path string, blob store.Info, res *meta.Result) {
	if res.File != nil && res.File.Version == res.Version && res.File.BlobID != blob.ID {
		s.st.Remove(path, blob.ID)
	}
}

// settledDuplicate answers a write found already applied (version v),
// once the file's current version is visible everywhere: acknowledging
// it earlier could let a node still answer for the version before.
func (s *Service) settledDuplicate(ctx context.Context, path string, v uint64) (Info, error) {
	if f := s.awaitSettled(ctx, path); f != nil && f.Pending {
		return Info{}, errPending()
	}
	return duplicate(s.fsm.File(path), v), nil
}

// takeRight returns the write right of cur's path for this node, marked
// busy in the resumer so that it is not released under the write. A
// holder skips the raft round trip (if its right was taken over meanwhile,
// the commit is refused by its fencing token); a release already on its
// way is waited for, then the right is taken again.
func (s *Service) takeRight(ctx context.Context, path string, cur *meta.File) (res *meta.Result, heldBefore bool, err error) {
	if cur != nil && cur.Holder == s.self {
		if s.resumer.begin(ctx, path, cur.Grant) {
			// Busy now: no release can start. Check one finished just before.
			if now := s.fsm.File(path); now.Holder == s.self && now.Grant == cur.Grant {
				return &meta.Result{File: now}, true, nil
			}
			s.resumer.end(path, cur.Grant)
		}
		cur = s.fsm.File(path)
	}
	for {
		res, err = s.cl.Apply(ctx, meta.Command{Kind: meta.KindAcquire, Path: path, Node: s.self, Force: cur != nil && cur.Holder != "" && cur.Holder != s.self})
		if err != nil || res.Err != nil {
			return res, false, err
		}
		if s.resumer.begin(ctx, path, res.File.Grant) {
			return res, false, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		cur = s.fsm.File(path)
	}
}

// minPushRate is the slowest transfer a standby push is given time for.
const minPushRate = 8 << 20 // bytes per second

// afterBody bounds the round trips of a write once its body of size
// bytes is stored here: the standby push (given time for the transfer)
// and the commit.
func (s *Service) afterBody(parent context.Context, size int64) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, s.cfg.WriteTimeout+time.Duration(size/minPushRate)*time.Second)
}

// commitError is the error of a commit the cluster did not decide.
func commitError(path string, err error) error {
	if isAPIError(err) {
		return err
	}
	return errNoQuorum("commit "+path, err)
}

// receive stores the body durably under a fresh blob ID and returns the
// hex MD5 of its content beside the store's SHA-256.
func (s *Service) receive(path string, body io.Reader, size int64) (store.Info, string, error) {
	id := newBlobID()
	s.protect.add(path, id, 2*s.cfg.WriteTimeout)
	wr, err := s.st.Create(path, id)
	if err != nil {
		return store.Info{}, "", err
	}
	sum := md5.New()
	// The Writer reads into its own buffer (io.ReaderFrom); a MultiWriter
	// would make io.Copy allocate 32 KiB per write.
	n, err := io.Copy(wr, io.TeeReader(io.LimitReader(body, s.cfg.MaxBody+1), sum))
	switch {
	case err != nil:
	case n > s.cfg.MaxBody:
		err = &TooLargeError{Size: -1, Limit: s.cfg.MaxBody}
	case size >= 0 && n != size:
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		wr.Abort()
		return store.Info{}, "", err
	}
	info, err := wr.Commit()
	return info, hex.EncodeToString(sum.Sum(nil)), err
}

// bodyError is the error of a body that could not be received.
func (s *Service) bodyError(err error) error {
	switch {
	case errors.Is(err, ErrTooLarge):
		return err
	case errors.Is(err, store.ErrNoSpace):
		return kindErr(ErrNoSpace, err, "this node's disk is full; the previous version is unchanged: %v", err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.Canceled), errors.Is(err, ErrTruncated):
		return kindErr(ErrTruncated, err, "the body ended before Content-Length bytes arrived; nothing was changed")
	default:
		s.log.Error("receive body", "err", err)
		return kindErr(ErrInternal, err, "could not store the body: %v", err)
	}
}

// stateError is the error of a refusal of the state machine.
func (s *Service) stateError(ctx context.Context, path string, err error) error {
	if errors.Is(err, meta.ErrPrecondition) || errors.Is(err, meta.ErrNotFound) {
		// The refusal reveals the current version: answer only once it is
		// visible everywhere, or a reader could still be given the old one.
		if f := s.awaitSettled(ctx, path); f != nil && f.Pending {
			return errPending()
		}
	}
	switch {
	case errors.Is(err, meta.ErrPrecondition):
		return kindErr(ErrPrecondition, err, "%s", err.Error())
	case errors.Is(err, meta.ErrNotFound):
		return kindErr(ErrNotFound, err, "%s", err.Error())
	case errors.Is(err, meta.ErrNotHolder), errors.Is(err, meta.ErrHeld):
		return kindErr(ErrConflict, err, "another write took over this file meanwhile; nothing was changed by this request: %v", err)
	default:
		return kindErr(ErrInternal, err, "%s", err.Error())
	}
}

func newBlobID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// idemOrRandom makes every write carry a key, so that a commit retried
// inside the cluster is recognised as a duplicate.
func idemOrRandom(k string) string {
	if k != "" {
		return k
	}
	return "auto-" + newBlobID()
}
