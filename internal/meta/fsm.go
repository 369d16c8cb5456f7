package meta

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
)

// FSM adapts State to raft.FSM and lets the rest of the node read the state
// concurrently, wait for an index to be applied, and learn which paths
// changed.
type FSM struct {
	mu      sync.RWMutex
	state   *State
	applied uint64
	// changed collects paths touched since the last DrainChanges; rescan
	// is set when a change (a snapshot restore, a node set change) may
	// affect every path. Beyond maxChanged paths, overflow is set instead
	// and paths are no longer collected: the next drain asks for a rescan,
	// which covers them, and changed stays small while nobody drains it
	// (a follower replaying a long log).
	changed  map[string]struct{}
	overflow bool
	rescan   bool
	// notify is closed and replaced at every apply: a broadcast.
	notify chan struct{}
}

// NewFSM returns an FSM over an empty state.
func NewFSM() *FSM {
	return &FSM{state: NewState(), changed: map[string]struct{}{}, notify: make(chan struct{})}
}

// Apply implements raft.FSM.
func (m *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		m.mu.Lock()
		m.advance(l.Index)
		m.mu.Unlock()
		return nil
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
	if c.Kind == KindNodeUpsert || c.Kind == KindNodeRemove || c.Kind == KindSetConfig {
		m.rescan = true
	}
	m.advance(l.Index)
	return r
}

// maxChanged bounds the paths remembered between two DrainChanges.
const maxChanged = 1 << 16

// noteChanged remembers that path changed, as its record's string rather
// than the decoded command's copy.
func (m *FSM) noteChanged(path string) {
	if m.overflow {
		return
	}
	if f := m.state.File(path); f != nil {
		path = f.Path
	}
	if _, ok := m.changed[path]; !ok && len(m.changed) >= maxChanged {
		m.overflow = true
		m.changed = map[string]struct{}{} // clear would keep the memory
		return
	}
	m.changed[path] = struct{}{}
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

// DrainChanges returns the paths changed since the last call, and whether
// every path should be looked at again.
func (m *FSM) DrainChanges() (paths []string, rescan bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p := range m.changed {
		paths = append(paths, p)
	}
	if len(paths) > 1024 {
		m.changed = map[string]struct{}{} // let a burst's memory go
	} else {
		clear(m.changed)
	}
	rescan = m.rescan || m.overflow
	m.rescan, m.overflow = false, false
	return paths, rescan
}
