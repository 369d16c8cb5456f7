package meta

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/hashicorp/raft"
)

// snapshotData is the state as of one index, captured by Snapshot and
// written by Persist (in the binary format of snapcodec.go). Its JSON
// form is the first snapshot format, which Restore still reads.
type snapshotData struct {
	Applied uint64            `json:"applied"`
	Files   []*File           `json:"files"`
	Nodes   []Node            `json:"nodes"`
	Config  map[string]string `json:"config"`
	Idem    []IdemRecord      `json:"idem"`
	// Sections hold the other namespaces' parts, by namespace (not in the
	// JSON form, which predates them).
	Sections []section `json:"-"`
}

// section is one part's state in a snapshot.
type section struct {
	NS      string
	Version int
	Data    []byte
}

// Snapshot implements raft.FSM. Records are immutable, so copying the
// pointers under the read lock is enough; encoding happens in Persist.
func (m *FSM) Snapshot() (raft.FSMSnapshot, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	d := &snapshotData{Applied: m.applied, Nodes: m.state.Nodes(), Config: maps.Clone(m.state.config)}
	d.Idem = m.state.idemRecords()
	d.Files = make([]*File, 0, m.state.files.Len())
	m.state.files.Ascend(func(f *File) bool {
		d.Files = append(d.Files, f)
		return true
	})
	for _, ns := range slices.Sorted(maps.Keys(m.parts)) {
		p := m.parts[ns]
		b, err := p.Snapshot()
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", ns, err)
		}
		if b != nil {
			d.Sections = append(d.Sections, section{NS: ns, Version: p.Version(), Data: b})
		}
	}
	return d, nil
}

// Persist implements raft.FSMSnapshot.
func (d *snapshotData) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, d); err != nil {
		sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (d *snapshotData) Release() {}

// Restore implements raft.FSM. It reads the binary format and, from
// snapshots taken before it, the JSON one.
func (m *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	var (
		s        *State
		applied  uint64
		sections []section
		err      error
	)
	if head, _ := br.Peek(len(snapMagic)); bytes.Equal(head, []byte(snapMagic)) {
		s, applied, sections, err = readSnapshot(br)
	} else {
		s, applied, err = readJSONSnapshot(br)
	}
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.restoreParts(sections); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	m.state = s
	m.noteRescan()
	m.advance(applied)
	return nil
}

// restoreParts gives every part its section, or nil when the snapshot has
// none for it. A section no part here reads fails the restore: its state
// would be lost, and this node would diverge from the others.
func (m *FSM) restoreParts(sections []section) error {
	byNS := map[string]section{}
	for _, sec := range sections {
		if _, err := m.part(sec.NS, sec.Version); err != nil {
			return fmt.Errorf("%w: section: %w", errBadSnapshot, err)
		}
		byNS[sec.NS] = sec
	}
	for ns, p := range m.parts {
		if err := p.Restore(byNS[ns].Data); err != nil {
			return fmt.Errorf("restore %s: %w", ns, err)
		}
	}
	return nil
}

// readJSONSnapshot reads the first snapshot format: snapshotData as JSON.
func readJSONSnapshot(r io.Reader) (*State, uint64, error) {
	var d snapshotData
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return nil, 0, err
	}
	s := NewState()
	for _, f := range d.Files {
		if f == nil {
			return nil, 0, fmt.Errorf("%w: null file record", errBadSnapshot)
		}
		s.put(f)
	}
	for _, n := range d.Nodes {
		s.restoreNode(n)
	}
	maps.Copy(s.config, d.Config)
	s.configChanged()
	for _, r := range d.Idem {
		s.rememberIdem(r)
	}
	return s, d.Applied, nil
}

// restoreNode adds a node record from a snapshot.
func (s *State) restoreNode(n Node) {
	n.ID = s.in.id(n.ID)
	s.nodes[n.ID] = &n
}
