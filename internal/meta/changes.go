package meta

// The change feed: which paths changed since a reader last looked. Each
// subscriber (the file service's replication loop, a cache, a session
// table...) has its own Feed and drains it at its own pace.

// maxChanged bounds the paths a feed remembers between two drains.
const maxChanged = 1 << 16

// Feed is one subscriber's view of the change feed. It collects paths
// touched since its last Drain; rescan is set when a change (a snapshot
// restore, a node set change, a setting) may affect every path. Beyond
// maxChanged paths, overflow is set instead and paths are no longer
// collected: the next drain asks for a rescan, which covers them, and the
// set stays small while nobody drains it (a follower replaying a long log).
type Feed struct {
	m        *FSM
	changed  map[string]struct{}
	overflow bool
	rescan   bool
}

// Subscribe returns a new feed, which sees every change from now on.
// Unsubscribe it when done: an undrained feed costs up to maxChanged paths.
func (m *FSM) Subscribe() *Feed {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.subscribe()
}

func (m *FSM) subscribe() *Feed {
	f := &Feed{m: m, changed: map[string]struct{}{}}
	m.feeds = append(m.feeds, f)
	return f
}

// Unsubscribe stops f collecting changes.
func (m *FSM) Unsubscribe(f *Feed) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, g := range m.feeds {
		if g == f {
			m.feeds = append(m.feeds[:i], m.feeds[i+1:]...)
			return
		}
	}
}

// DrainChanges drains the FSM's default feed: the paths changed since the
// last call, and whether every path should be looked at again.
func (m *FSM) DrainChanges() (paths []string, rescan bool) { return m.def.Drain() }

// Drain returns the paths changed since the last call, and whether every
// path should be looked at again.
func (f *Feed) Drain() (paths []string, rescan bool) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	for p := range f.changed {
		paths = append(paths, p)
	}
	if len(paths) > 1024 {
		f.changed = map[string]struct{}{} // let a burst's memory go
	} else {
		clear(f.changed)
	}
	rescan = f.rescan || f.overflow
	f.rescan, f.overflow = false, false
	return paths, rescan
}

// noteChanged tells every feed that path changed, as its record's string
// rather than the decoded command's copy.
func (m *FSM) noteChanged(path string) {
	if f := m.state.File(path); f != nil {
		path = f.Path
	}
	for _, f := range m.feeds {
		f.note(path)
	}
}

func (f *Feed) note(path string) {
	if f.overflow {
		return
	}
	if _, ok := f.changed[path]; !ok && len(f.changed) >= maxChanged {
		f.overflow = true
		f.changed = map[string]struct{}{} // clear would keep the memory
		return
	}
	f.changed[path] = struct{}{}
}

// noteRescan tells every feed to look at every path again.
func (m *FSM) noteRescan() {
	for _, f := range m.feeds {
		f.rescan = true
	}
}
