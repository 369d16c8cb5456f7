package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	// affect every path.
	changed map[string]struct{}
	rescan  bool
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
		m.changed[c.Path] = struct{}{}
	}
	if c.Kind == KindNodeUpsert || c.Kind == KindNodeRemove || c.Kind == KindSetConfig {
		m.rescan = true
	}
	m.advance(l.Index)
	return r
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
	clear(m.changed)
	rescan, m.rescan = m.rescan, false
	return paths, rescan
}

// snapshotData is the serialised form of the state.
type snapshotData struct {
	Applied uint64            `json:"applied"`
	Files   []*File           `json:"files"`
	Nodes   []Node            `json:"nodes"`
	Config  map[string]string `json:"config"`
	Idem    []IdemRecord      `json:"idem"`
}

// Snapshot implements raft.FSM. Records are immutable, so copying the
// pointers under the read lock is enough; encoding happens in Persist.
func (m *FSM) Snapshot() (raft.FSMSnapshot, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	d := &snapshotData{Applied: m.applied, Nodes: m.state.Nodes(), Config: map[string]string{}}
	for k, v := range m.state.config {
		d.Config[k] = v
	}
	d.Idem = m.state.idemRecords()
	d.Files = make([]*File, 0, m.state.files.Len())
	m.state.files.Ascend(func(f *File) bool {
		d.Files = append(d.Files, f)
		return true
	})
	return d, nil
}

// Persist implements raft.FSMSnapshot.
func (d *snapshotData) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(d); err != nil {
		sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (d *snapshotData) Release() {}

// Restore implements raft.FSM.
func (m *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var d snapshotData
	if err := json.NewDecoder(rc).Decode(&d); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	s := NewState()
	for _, f := range d.Files {
		s.put(f)
	}
	for i := range d.Nodes {
		n := d.Nodes[i]
		s.nodes[n.ID] = &n
	}
	for k, v := range d.Config {
		s.config[k] = v
	}
	for _, r := range d.Idem {
		s.rememberIdem(r)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state = s
	m.rescan = true
	m.advance(d.Applied)
	return nil
}
