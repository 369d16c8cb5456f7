package files

import (
	"context"
	"errors"
	"fmt"

	"github.com/mure-dev/mure/internal/meta"
)

// Open opens the current version of path for reading (docs/protocol.md,
// "Read"). It answers from the local replica when this node may: it holds
// a valid copy, has a read lease, and no invalidation of the path is
// pending. Otherwise it returns a *HeldElsewhereError naming a node with
// a valid copy, or, with o.Forward, streams the read from that node. A
// version still being made visible is waited for (Config.SettleWait).
func (s *Service) Open(ctx context.Context, path string, o OpenOptions) (*Reader, error) {
	if err := ValidatePath(path); err != nil {
		return nil, err
	}
	if o.Offset < 0 || o.Length < 0 {
		return nil, kindErr(ErrBadRequest, nil, "a range needs a non-negative offset and length")
	}
	j := s.judgeRead(ctx, path)
	if o.sentHere() {
		j = s.judgeSentHere(ctx, path, j, o)
	} else if j.awaitsOwnLease(s, o) && s.awaitLease(ctx) {
		j = s.judgeRead(ctx, path)
	}
	if o.Explain != nil {
		o.Explain.Judged = fmt.Sprintf("applied=%d fenced=%v leased=%v lease=%s", j.applied, j.fenced, j.leased, s.cl.LeaseInfo())
	}
	switch {
	case j.pending && !j.leased:
		return nil, errNoLease()
	case j.pending:
		return nil, errPending()
	}
	f := j.f
	if j.mayServe(s, o.Stale) && !s.hot.isRetiring(path) {
		if rd := s.openLocal(f, o); rd != nil {
			if o.counted() {
				s.hot.read(path, true)
			}
			return rd, nil
		}
	}
	switch {
	case j.awaitsLease(s, o):
		return nil, errNoLease() // sent on, it could come back: see awaitsLease
	case j.awaitsFence(s, o):
		return nil, errPending() // likewise: see awaitsFence
	}
	var target string
	switch {
	case j.fenced:
		target = j.hint
	case !j.leased && !f.Exists():
		return nil, errNoLease()
	case !f.Exists():
		if o.Explain != nil {
			o.Explain.Record = "none"
			if f != nil {
				o.Explain.Record = fmt.Sprintf("v=%d deleted=%v pending=%v", f.Version, f.Deleted, f.Pending)
			}
		}
		return nil, kindErr(ErrNotFound, nil, "no file at %s", path)
	default:
		target = s.pickReplica(f)
		if target == "" && !j.leased {
			return nil, errNoLease() // the copy may be here, but it cannot be confirmed current
		}
		if target == "" {
			return nil, unavailable(ErrUnavailable, nil, "no reachable node holds a valid copy of "+path+" right now")
		}
		if o.counted() {
			s.hot.read(path, false)
		}
	}
	if !o.mayForward() {
		return nil, s.heldElsewhere(path, target)
	}
	rd, err := s.forwardRead(ctx, path, target, o)
	if err != nil && !j.fenced && errors.Is(err, errUnreachable) {
		// A read can be tried again: once more, on another valid copy.
		if next := s.pickReplicaExcept(f, target); next != "" {
			return s.forwardRead(ctx, path, next, o)
		}
	}
	return rd, err
}

// Stat returns the Info of path's current version, judged like Open.
func (s *Service) Stat(ctx context.Context, path string, o OpenOptions) (Info, error) {
	if err := ValidatePath(path); err != nil {
		return Info{}, err
	}
	j := s.judgeRead(ctx, path)
	if !j.pending && !j.fenced && (j.leased || o.Stale || s.cfg.UnsafeReads) {
		if !j.f.Exists() {
			return Info{}, kindErr(ErrNotFound, nil, "no file at %s", path)
		}
		return infoOf(j.f), nil
	}
	o.Offset, o.Length = 0, 1 // only the Info is wanted: a forwarded read sends one byte
	rd, err := s.Open(ctx, path, o)
	if err != nil {
		return Info{}, err
	}
	info := rd.Info()
	rd.Close()
	return info, nil
}

// openLocal opens the local copy of f; nil when it is missing or failed
// its checksum check (the caller then looks elsewhere).
func (s *Service) openLocal(f *meta.File, o OpenOptions) *Reader {
	b, err := s.st.Open(f.Path, f.BlobID)
	if err != nil {
		s.openFailed(f, err)
		return nil
	}
	rd := &Reader{s: s, f: f, b: b, node: s.self, holder: f.Holder == s.self}
	rd.setRange(o.Offset, o.Length)
	s.metrics.localReads.Inc()
	if o.Client != "" {
		rd.ReadBy(o.Client)
	}
	return rd
}

// heldElsewhere is the error that sends a request to node target.
func (s *Service) heldElsewhere(path, target string) error {
	addr, _, ok := s.nodeAddrs(target)
	if !ok || target == s.self {
		addr = ""
	}
	return &HeldElsewhereError{Path: path, Node: target, Addr: addr}
}

// pickReplica chooses a node to send a read to: the first other node of
// readOrder (nearest, then least loaded; see docs/decisions/0036).
func (s *Service) pickReplica(f *meta.File) string { return s.pickReplicaExcept(f, "") }

// pickReplicaExcept is pickReplica avoiding node not (a node that just
// failed to answer).
func (s *Service) pickReplicaExcept(f *meta.File, not string) string {
	for _, h := range readOrder(s.cl.Zone(), s.holders(f)) {
		if h.id != s.self && h.id != not {
			return h.id
		}
	}
	return ""
}

// readJudgment is what a node knows when it judges a read of one path:
// fence and lease first, the record after, so that the record is at least
// as new as the state they were judged on (a record read earlier could
// predate the very write the fence is about).
type readJudgment struct {
	applied uint64
	fenced  bool
	fence   uint64 // a fenced path: the index this node must apply first
	hint    string // a fenced path: the node the writer is on
	leased  bool
	f       *meta.File
	pending bool // still being made visible after the settle wait
}

// judgeRead gathers the judgment of a read of p. A pending version is
// waited for: no node answers for a version until the leader has fenced
// every node that could still answer for the one before.
func (s *Service) judgeRead(ctx context.Context, p string) readJudgment {
	j := readJudgment{applied: s.fsm.Applied()}
	fc, fenced := s.fences.check(p, j.applied)
	j.fenced, j.fence, j.hint = fenced, fc.idx, fc.hint
	j.leased = s.cl.HasReadLease()
	j.f = s.fsm.File(p)
	if j.f != nil && j.f.Pending && !s.cfg.UnsafeReads {
		if j.f = s.awaitSettled(ctx, p); j.f != nil && j.f.Pending {
			j.pending = true
		}
	}
	return j
}

// judgeSentHere judges again, after waiting for what it lacks, a read
// that another node sent here (awaitsLease, awaitsFence).
func (s *Service) judgeSentHere(ctx context.Context, path string, j readJudgment, o OpenOptions) readJudgment {
	if j.awaitsLease(s, o) && s.awaitLease(ctx) {
		j = s.judgeRead(ctx, path)
	}
	if j.awaitsFence(s, o) && s.awaitApplied(ctx, j.fence) {
		j = s.judgeRead(ctx, path)
	}
	return j
}

// awaitsLease reports whether a read must wait for this node's read lease
// rather than be sent on. Without a lease a node cannot trust its view,
// and a read that another node sent here may have come from a node
// without a lease too: each would name the other as the one to ask
// (both hold valid copies; neither may serve them), and the read would
// bounce between them until the hop limit, all within a lease lapse — a
// leader election, a node stalled under load. So a read sent here waits,
// bounded by LeaseWait, and is answered here: from the local copy once
// the lease is back, else ErrNoQuorum (a 503 the client retries). A read
// straight from a client is still sent to another holder at once: this
// node may be the one cut off from the leader.
func (j *readJudgment) awaitsLease(s *Service, o OpenOptions) bool {
	return !j.leased && o.sentHere() && !o.Stale && !s.cfg.UnsafeReads
}

// awaitsOwnLease reports whether a client's read must wait for this
// node's read lease: without it the node cannot judge the read, and it
// has no other node to send it to — no file in its state (it cannot
// answer 404), a version still pending, or no other valid copy. Such a
// read would fail with ErrNoQuorum at once, though a lease that lapsed
// for a moment (a slow renewal under load, an election) is back within
// LeaseWait; so it waits for it, bounded by LeaseWait, and is judged
// again. A read another holder can answer is still sent there at once.
func (j *readJudgment) awaitsOwnLease(s *Service, o OpenOptions) bool {
	if j.leased || j.fenced || o.Stale || s.cfg.UnsafeReads {
		return false
	}
	return j.pending || !j.f.Exists() || s.pickReplica(j.f) == ""
}

// awaitsFence reports whether a read must wait until this node has
// applied the write its fence on the path is about, rather than be sent to
// the fence's hint. Two nodes can each hold a fence naming the other (two
// writes in quick succession, each node behind on the other's): a read
// sent here would bounce between them until one has applied its index —
// under load, longer than eight hops take. Applying is local and quick, so
// a read sent here waits for it, bounded by LeaseWait, then ErrPending.
func (j *readJudgment) awaitsFence(s *Service, o OpenOptions) bool {
	return j.fenced && o.sentHere() && !s.cfg.UnsafeReads
}

// awaitApplied waits, bounded by LeaseWait, until this node has applied
// index idx.
func (s *Service) awaitApplied(ctx context.Context, idx uint64) bool {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.LeaseWait)
	defer cancel()
	return s.fsm.WaitApplied(ctx, idx) == nil
}

// awaitLease waits, bounded by LeaseWait, for this node's read lease.
func (s *Service) awaitLease(ctx context.Context) bool {
	s.metrics.readLeaseWaits.Inc()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.LeaseWait)
	defer cancel()
	return s.cl.AwaitReadLease(ctx)
}

// mayServe reports whether the local copy may answer the read (stale: the
// client accepts a copy this node cannot confirm with the leader).
func (j *readJudgment) mayServe(s *Service, stale bool) bool {
	if j.pending || !j.f.Exists() {
		return false
	}
	if s.cfg.UnsafeReads {
		return true
	}
	return j.f.IsValidOn(s.self) && !j.fenced && (j.leased || stale)
}
