package meta

import (
	"fmt"
	"slices"
)

// Apply executes one command at raft index idx and reports what changed.
// It never fails as a machine: refusals are in Result.Err.
func (s *State) Apply(idx uint64, c Command) *Result {
	r := &Result{Index: idx}
	switch c.Kind {
	case KindAcquire:
		r.File, r.Err = s.acquire(idx, c)
	case KindCommit:
		r.File, r.Invalidated, r.Duplicate, r.Err = s.commit(idx, c)
		r.Version = s.idemVersion(c.Idem, idx, r)
	case KindRelease:
		r.File, r.Err = s.release(c)
	case KindReplica:
		r.File, r.Err = s.replica(c)
	case KindReplicas, KindReleases, KindSettles:
		r.Refused, r.Err = s.batch(c)
	case KindDrop:
		r.File, r.Err = s.drop(c)
	case KindDelete:
		r.File, r.Invalidated, r.Duplicate, r.Err = s.delete(idx, c)
		r.Version = s.idemVersion(c.Idem, idx, r)
	case KindSettle:
		r.File, r.Err = s.settle(c)
	case KindSetConfig:
		r.Err = s.setConfig(c)
	case KindNodeUpsert:
		r.Err = s.nodeUpsert(c)
	case KindNodeRemove:
		r.Err = s.nodeRemove(c, r)
	default:
		r.Err = fmt.Errorf("%w: unknown kind %q", ErrBadCommand, c.Kind)
	}
	return r
}

// idemVersion is the version a commit or delete produced: this index, or
// the first attempt's for a duplicate.
func (s *State) idemVersion(key string, idx uint64, r *Result) uint64 {
	if r.Duplicate {
		rec, _ := s.Idem(key)
		return rec.Version
	}
	if r.Err != nil {
		return 0
	}
	return idx
}

// fileOrNew returns a private copy of path's record to modify.
func (s *State) fileOrNew(path string) *File {
	if f := s.File(path); f != nil {
		return f.clone()
	}
	return &File{Path: path}
}

func (s *State) acquire(idx uint64, c Command) (*File, error) {
	if c.Path == "" || c.Node == "" {
		return nil, fmt.Errorf("%w: acquire needs a path and a node", ErrBadCommand)
	}
	if n := s.nodes[c.Node]; n == nil || n.State != NodeActive {
		return nil, fmt.Errorf("%w: %s is not an active node", ErrUnknownNode, c.Node)
	}
	f := s.fileOrNew(c.Path)
	switch {
	case f.Holder == c.Node:
		return f, nil // already held: idempotent
	case f.Holder != "" && !c.Force:
		return f, fmt.Errorf("%w: %s holds %s", ErrHeld, f.Holder, c.Path)
	}
	f.Holder, f.Grant = c.Node, idx
	s.put(f)
	return f, nil
}

func (s *State) commit(idx uint64, c Command) (*File, []string, bool, error) {
	cur := s.File(c.Path)
	sum, err := ParseSHA256(c.Sum)
	if err != nil {
		return cur, nil, false, fmt.Errorf("commit %s: %w", c.Path, err)
	}
	md5, err := ParseMD5(c.MD5)
	if err != nil {
		return cur, nil, false, fmt.Errorf("commit %s: %w", c.Path, err)
	}
	if s.retryOf(c) {
		// A retry of a commit already applied (its answer was lost): the
		// same outcome, even if the right or the file changed since.
		return cur, nil, true, nil
	}
	var f *File
	if c.Take {
		if f, err = s.take(idx, c); err != nil {
			return cur, nil, false, err
		}
	} else if cur == nil || cur.Holder == "" || cur.Holder != c.Node || cur.Grant != c.Grant {
		return cur, nil, false, fmt.Errorf("%w: %s on %s (grant %d)", ErrNotHolder, c.Node, c.Path, c.Grant)
	} else {
		f = cur.clone()
	}
	old := cur
	if old == nil {
		old = &File{Path: c.Path} // a Take on a path never written
	}
	if err := c.Cond.Check(old); err != nil {
		return cur, nil, false, err
	}
	f.Version, f.BlobID, f.Size, f.Sum, f.Modified, f.Deleted = idx, c.BlobID, c.Size, sum, StampOf(c.Time), false
	f.MD5, f.Attrs = md5, s.in.attrs(c.Attrs.orNil())
	f.Valid = []string{c.Node}
	for _, id := range c.Standby {
		if n := s.nodes[id]; n != nil && n.State == NodeActive {
			f.Valid = append(f.Valid, id)
		}
	}
	slices.Sort(f.Valid)
	f.Valid = slices.Compact(f.Valid)
	s.rememberIdem(IdemRecord{Key: c.Idem, Kind: c.Kind, Path: c.Path, Version: idx})
	// Every node that could answer for the old version from its own state
	// must stop before anyone answers for the new one: the old valid copies
	// (also those that stay valid, whose state may lag), or, for a
	// creation, every node (they answered "not found"). Until then the
	// version is pending.
	var before []string
	if cur.Exists() {
		before = cur.Valid
	} else {
		before = s.servingNodes()
	}
	inv := s.pend(f, cur, before)
	if c.Take && s.alone(c.Node) {
		// Nobody else could answer for the old state, and the writer
		// answers only once it has applied this: nothing to fence.
		f.Pending, f.Unfenced, inv = false, nil, nil
	}
	s.put(f)
	return f, inv, false, nil
}

// take gives a Take commit the write right, as Acquire would without
// force: refused if another node holds it; kept if the writer does.
func (s *State) take(idx uint64, c Command) (*File, error) {
	if n := s.nodes[c.Node]; n == nil || n.State != NodeActive {
		return nil, fmt.Errorf("%w: %s is not an active node", ErrUnknownNode, c.Node)
	}
	f := s.fileOrNew(c.Path)
	switch f.Holder {
	case c.Node:
	case "":
		f.Holder, f.Grant = c.Node, idx
	default:
		return nil, fmt.Errorf("%w: %s holds %s", ErrHeld, f.Holder, c.Path)
	}
	return f, nil
}

// alone reports whether node is the only node not removed (a one-node
// cluster).
func (s *State) alone(node string) bool {
	for id, n := range s.nodes {
		if id != node && n.State != NodeRemoved {
			return false
		}
	}
	return s.nodes[node] != nil
}

// pend marks f pending until the nodes that may still answer for an older
// state are fenced: those of before, and those the previous version, if
// still pending, had not yet seen fenced. It returns them. The proposer is
// not left out: its own view lags until it has applied the command, and
// other clients may read from it meanwhile.
func (s *State) pend(f, cur *File, before []string) []string {
	all := slices.Clone(before)
	if cur != nil && cur.Pending {
		all = append(all, cur.unfenced()...)
	}
	slices.Sort(all)
	inv := slices.Compact(all)
	f.Pending, f.Unfenced = len(inv) > 0, nodesRef(inv)
	return inv
}

func (s *State) release(c Command) (*File, error) {
	cur := s.File(c.Path)
	if cur == nil || cur.Holder == "" || cur.Holder != c.Node || cur.Grant != c.Grant {
		return cur, fmt.Errorf("%w: %s on %s (grant %d)", ErrNotHolder, c.Node, c.Path, c.Grant)
	}
	f := cur.clone()
	f.Holder, f.Grant = "", 0
	s.put(f)
	return f, nil
}

func (s *State) replica(c Command) (*File, error) {
	cur := s.File(c.Path)
	switch {
	case cur == nil || !cur.Exists() || cur.Version != c.Version:
		return cur, fmt.Errorf("%w: %s is not at version %d", ErrStale, c.Path, c.Version)
	case cur.Suspended():
		// Replication is suspended while a write right is held; the copy
		// will be offered again after the release.
		return cur, fmt.Errorf("%w: %s is suspended", ErrStale, c.Path)
	case s.nodes[c.Node] == nil || s.nodes[c.Node].State != NodeActive:
		return cur, fmt.Errorf("%w: %s", ErrUnknownNode, c.Node)
	case cur.IsValidOn(c.Node):
		return cur, nil
	}
	f := cur.clone()
	f.Valid = append(f.Valid, c.Node)
	slices.Sort(f.Valid)
	s.put(f)
	return f, nil
}

// batch applies a Replicas, Releases or Settles command: each item as
// the single command would be; items refused are left as they are.
func (s *State) batch(c Command) (refused []int, err error) {
	if c.Node == "" && c.Kind != KindSettles || len(c.Items) == 0 || len(c.Items) > MaxItems {
		return nil, fmt.Errorf("%w: %s needs 1 to %d items (and a node, but for settles)", ErrBadCommand, c.Kind, MaxItems)
	}
	for _, it := range c.Items {
		if it.Path == "" {
			return nil, fmt.Errorf("%w: %s item without a path", ErrBadCommand, c.Kind)
		}
	}
	for i, it := range c.Items {
		var err error
		switch c.Kind {
		case KindReleases:
			_, err = s.release(Command{Kind: KindRelease, Path: it.Path, Node: c.Node, Grant: it.Grant})
		case KindReplicas:
			_, err = s.replica(Command{Kind: KindReplica, Path: it.Path, Node: c.Node, Version: it.Version})
		case KindSettles:
			_, err = s.settle(Command{Kind: KindSettle, Path: it.Path, Version: it.Version})
		}
		if err != nil {
			refused = append(refused, i)
		}
	}
	return refused, nil
}

// drop removes a node from the valid set of the current version. No
// fence is needed: the node stopped serving the copy before reporting,
// and a node that redirects a read to it is redirected on from there.
func (s *State) drop(c Command) (*File, error) {
	cur := s.File(c.Path)
	switch {
	case cur == nil || !cur.Exists() || cur.Version != c.Version:
		return cur, fmt.Errorf("%w: %s is not at version %d", ErrStale, c.Path, c.Version)
	case !cur.IsValidOn(c.Node):
		return cur, nil
	case c.Keep > 0 && s.validActive(cur, c.Node) < c.Keep:
		return cur, fmt.Errorf("%w: %s has %d other valid copies on active nodes, %d to keep", ErrKeep, c.Path, s.validActive(cur, c.Node), c.Keep)
	}
	f := cur.clone()
	f.Valid = without(f.Valid, c.Node)
	s.put(f)
	return f, nil
}

// validActive counts f's valid copies on active nodes other than not.
func (s *State) validActive(f *File, not string) int {
	n := 0
	for _, id := range f.Valid {
		if nd := s.nodes[id]; id != not && nd != nil && nd.State == NodeActive {
			n++
		}
	}
	return n
}

func (s *State) delete(idx uint64, c Command) (*File, []string, bool, error) {
	cur := s.File(c.Path)
	if s.retryOf(c) {
		return cur, nil, true, nil // a retry of a delete already applied
	}
	if !cur.Exists() {
		return cur, nil, false, fmt.Errorf("%w: %s", ErrNotFound, c.Path)
	}
	if cur.Holder != "" && cur.Holder != c.Node && !c.Force {
		return cur, nil, false, fmt.Errorf("%w: %s holds %s", ErrHeld, cur.Holder, c.Path)
	}
	if err := c.Cond.Check(cur); err != nil {
		return cur, nil, false, err
	}
	f := cur.clone()
	f.Version, f.Deleted, f.Modified = idx, true, StampOf(c.Time)
	f.BlobID, f.Size, f.Sum, f.MD5, f.Attrs = "", 0, SHA256{}, MD5{}, nil
	f.Holder, f.Grant, f.Valid = "", 0, nil
	s.rememberIdem(IdemRecord{Key: c.Idem, Kind: c.Kind, Path: c.Path, Version: idx})
	inv := s.pend(f, cur, cur.Valid)
	s.put(f)
	return f, inv, false, nil
}

// settle ends a version's pending state once the leader has fenced every
// node that could still answer for the previous one.
func (s *State) settle(c Command) (*File, error) {
	cur := s.File(c.Path)
	if cur == nil || cur.Version != c.Version {
		return cur, fmt.Errorf("%w: %s is not at version %d", ErrStale, c.Path, c.Version)
	}
	if !cur.Pending {
		return cur, nil
	}
	f := cur.clone()
	f.Pending, f.Unfenced = false, nil
	s.put(f)
	return f, nil
}

func (s *State) setConfig(c Command) error {
	if err := ValidateSetting(c.Key, c.Value); err != nil {
		return fmt.Errorf("%w: %v", ErrBadCommand, err)
	}
	s.config[c.Key] = c.Value
	s.configChanged()
	return nil
}

func (s *State) nodeUpsert(c Command) error {
	if c.Info == nil || c.Info.ID == "" {
		return fmt.Errorf("%w: node_upsert needs a node", ErrBadCommand)
	}
	if old := s.nodes[c.Info.ID]; old != nil && old.State == NodeRemoved {
		return fmt.Errorf("%w: %s was removed for good; wipe its data directory to add it as a new node", ErrUnknownNode, c.Info.ID)
	}
	n := *c.Info
	s.nodes[n.ID] = &n
	if n.State == NodeFailed {
		// Rights held by a failed node are released, so that replication
		// of its last versions resumes from their standby copies.
		s.releaseRightsOf(n.ID)
	}
	return nil
}

func (s *State) releaseRightsOf(node string) {
	var held []*File
	s.files.Ascend(func(f *File) bool {
		if f.Holder == node {
			held = append(held, f)
		}
		return true
	})
	for _, cur := range held {
		f := cur.clone()
		f.Holder, f.Grant = "", 0
		s.put(f)
	}
}

// nodeRemove marks a node removed and drops it from every file: its copies
// stop counting and a right it held is released.
func (s *State) nodeRemove(c Command, r *Result) error {
	n := s.nodes[c.Node]
	if n == nil {
		return fmt.Errorf("%w: %s", ErrUnknownNode, c.Node)
	}
	m := *n
	m.State, m.Since = NodeRemoved, c.Time
	s.nodes[c.Node] = &m
	var changed []*File
	s.files.Ascend(func(f *File) bool {
		if f.Holder == c.Node || f.IsValidOn(c.Node) {
			changed = append(changed, f)
		}
		return true
	})
	for _, cur := range changed {
		f := cur.clone()
		if f.Holder == c.Node {
			f.Holder, f.Grant = "", 0
		}
		f.Valid = slices.DeleteFunc(f.Valid, func(id string) bool { return id == c.Node })
		s.put(f)
	}
	r.Invalidated = []string{c.Node}
	return nil
}

// without returns ids less one.
func without(ids []string, drop string) []string {
	var out []string
	for _, id := range ids {
		if id != drop {
			out = append(out, id)
		}
	}
	return out
}
