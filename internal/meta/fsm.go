package meta

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
)

// FSM adapts State and the registered parts to raft.FSM and lets the rest
// of the node read the state concurrently, wait for an index to be
// applied, and learn which paths changed.
type FSM struct {
	mu      sync.RWMutex
	state   *State
	parts   map[string]Part
	applied uint64
	// feeds are the change feed's subscribers (changes.go); def is the
	// one DrainChanges reads.
	feeds []*Feed
	def   *Feed
	// notify is closed and replaced at every apply: a broadcast.
	notify chan struct{}
}

// NewFSM returns an FSM over an empty state, with the parts of the other
// namespaces. It panics if two parts share a namespace, or one takes the
// core's: the set of parts is fixed by the program.
func NewFSM(parts ...Part) *FSM {
	m := &FSM{state: NewState(), parts: map[string]Part{}, notify: make(chan struct{})}
	for _, p := range parts {
		ns := p.Namespace()
		if _, dup := m.parts[ns]; dup || ns == NSCore || ns == "" {
			panic(fmt.Sprintf("meta: namespace %q registered twice or reserved", ns))
		}
		m.parts[ns] = p
	}
	m.def = m.subscribe()
	return m
}

// Supports returns the namespaces and versions this FSM applies: what its
// node advertises.
func (m *FSM) Supports() Supports {
	s := Supports{NSCore: CoreVersion}
	for ns, p := range m.parts {
		s[ns] = p.Version()
	}
	return s
}

// Apply implements raft.FSM.
func (m *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		m.mu.Lock()
		m.advance(l.Index)
		m.mu.Unlock()
		return nil
	}
	if isOp(l.Data) {
		return m.applyOp(l)
	}
	c, err := DecodeCommand(l.Data)
	m.mu.Lock()
	defer m.mu.Unlock()
	var r *Result
	if err != nil {
		r = &Result{Index: l.Index, Err: err}
	} else {
		r = m.state.Apply(l.Index, c)
	}
	if c.Path != "" {
		m.noteChanged(c.Path)
	}
	for _, it := range c.Items {
		m.noteChanged(it.Path)
	}
	if c.Kind == KindNodeUpsert || c.Kind == KindNodeRemove || c.Kind == KindSetConfig {
		m.noteRescan()
	}
	m.advance(l.Index)
	return r
}

// applyOp hands an op to its namespace's part. An op no part here
// applies is refused alike on every node of this version.
func (m *FSM) applyOp(l *raft.Log) *Result {
	op, err := DecodeOp(l.Data)
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.advance(l.Index)
	if err != nil {
		return &Result{Index: l.Index, Err: err}
	}
	p, err := m.part(op.NS, op.V)
	if err != nil {
		return &Result{Index: l.Index, Err: err}
	}
	r := p.Apply(l.Index, op)
	if r == nil {
		r = &Result{}
	}
	r.Index = l.Index
	return r
}

// part returns the part that applies namespace ns at version v, or
// ErrUnknownNamespace: for an op (applyOp) and a snapshot's section
// (restoreParts) alike.
func (m *FSM) part(ns string, v int) (Part, error) {
	p := m.parts[ns]
	switch {
	case p == nil:
		return nil, fmt.Errorf("%w: %q (this node applies %s)", ErrUnknownNamespace, ns, m.Supports())
	case v > p.Version():
		return nil, fmt.Errorf("%w: %s v%d (this node applies up to v%d)", ErrUnknownNamespace, ns, v, p.Version())
	}
	return p, nil
}

// ReadPart runs fn with a namespace's part under the read lock (fn is not
// called when no part has that name). fn must not keep the part.
func (m *FSM) ReadPart(ns string, fn func(p Part)) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.parts[ns]
	if ok {
		fn(p)
	}
	return ok
}

func (m *FSM) advance(idx uint64) {
	if idx > m.applied {
		m.applied = idx
	}
	close(m.notify)
	m.notify = make(chan struct{})
}

// Read runs fn with the state under a read lock. fn must not keep the
// *State; records it returns may be kept (they are immutable).
func (m *FSM) Read(fn func(s *State)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	fn(m.state)
}

// File returns the current record of path, or nil.
func (m *FSM) File(path string) *File {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.state.File(path)
}

// Applied returns the last applied raft index.
func (m *FSM) Applied() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.applied
}

// Changed returns a channel closed at the next apply.
func (m *FSM) Changed() <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.notify
}

// WaitApplied blocks until index idx is applied or ctx ends.
func (m *FSM) WaitApplied(ctx context.Context, idx uint64) error {
	for {
		m.mu.RLock()
		applied, ch := m.applied, m.notify
		m.mu.RUnlock()
		if applied >= idx {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for index %d (applied %d): %w", idx, applied, ctx.Err())
		}
	}
}
