package meta

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/btree"
)

// State is the whole replicated state. It is not safe for concurrent use:
// FSM guards it.
type State struct {
	files  *btree.BTreeG[*File]
	nodes  map[string]*Node
	config map[string]string
	// typed caches ParseConfig of the settings (TypedConfig); nil once
	// they change. Readers share the FSM's read lock, hence atomic.
	typed atomic.Pointer[Config]
	// in shares node IDs and node sets between records (intern.go).
	in *interner
	// idem: recent idempotency keys (idem.go).
	idem idemTable
	// counts kept up to date by put.
	live, suspended, pending int
}

func lessFile(a, b *File) bool { return a.Path < b.Path }

// fileDegree is the b-tree's degree: nodes of up to 255 records. Wide
// nodes cost fewer bytes per record (about 13 for the tree's pointers and
// slack, against 15 at degree 32) and an insert moves at most 2 KB.
const fileDegree = 128

// NewState returns an empty state with default settings.
func NewState() *State {
	return &State{
		files:  btree.NewG(fileDegree, lessFile),
		nodes:  map[string]*Node{},
		config: map[string]string{},
		in:     newInterner(),
	}
}

// File returns the record of path, or nil.
func (s *State) File(path string) *File {
	key := pivots.Get().(*File)
	key.Path = path
	f, _ := s.files.Get(key)
	key.Path = ""
	pivots.Put(key)
	return f
}

// pivots are the search keys of File: a lookup is made for every write
// and every read, and a key allocated each time was a tenth of a write's
// garbage (issue 16). Readers search at once (FSM.Read), hence a pool.
var pivots = sync.Pool{New: func() any { return new(File) }}

// put publishes f, which must not be modified afterwards, in place of the
// record of its path.
func (s *State) put(f *File) {
	s.in.share(f)
	if old, ok := s.files.ReplaceOrInsert(f); ok {
		s.in.unshare(old)
		s.count(old, -1)
	}
	s.count(f, 1)
}

func (s *State) count(f *File, d int) {
	if f.Exists() {
		s.live += d
	}
	if f.Suspended() {
		s.suspended += d
	}
	if f.Pending {
		s.pending += d
	}
}

// Pending returns the number of versions not yet settled.
func (s *State) Pending() int { return s.pending }

// Node returns a node record, or nil.
func (s *State) Node(id string) *Node { return s.nodes[id] }

// Nodes returns all node records sorted by ID.
func (s *State) Nodes() []Node {
	out := make([]Node, 0, len(s.nodes))
	for _, n := range s.nodes {
		out = append(out, *n)
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// ActiveNodes returns the IDs of active nodes, sorted.
func (s *State) ActiveNodes() []string {
	var out []string
	for id, n := range s.nodes {
		if n.State == NodeActive {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// servingNodes returns the nodes that may answer reads from their own
// state (every node not removed: a failed or departed node that comes back
// holds a lease before it is active again), sorted.
func (s *State) servingNodes() []string {
	var out []string
	for id, n := range s.nodes {
		if n.State != NodeRemoved {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Config returns a copy of the settings, defaults included.
func (s *State) Config() map[string]string {
	m := DefaultConfig()
	maps.Copy(m, s.config)
	return m
}

// TypedConfig is ParseConfig(Config()), kept until the settings change:
// every write asks for it, and building and parsing the map each time was
// 1.5% of a one-node cluster's CPU under small writes (issue 16).
func (s *State) TypedConfig() Config {
	if c := s.typed.Load(); c != nil {
		return *c
	}
	c := ParseConfig(s.Config())
	s.typed.Store(&c)
	return c
}

// configChanged forgets TypedConfig's copy; called with the settings
// changed, under the FSM's write lock (or before the state is shared).
func (s *State) configChanged() { s.typed.Store(nil) }

// Counts returns the number of live files and of suspended ones.
func (s *State) Counts() (live, suspended int) { return s.live, s.suspended }

// ListEntry is one row of a listing: a file or, with a delimiter, a
// common prefix (File nil).
type ListEntry struct {
	File   *File
	Prefix string
}

// List walks live files in path order under prefix, starting after the
// cursor (as returned in a previous page's next, or a plain path: list
// after it). With a delimiter, paths sharing the part up to the next
// delimiter collapse into one prefix entry. It returns at most limit
// entries and the cursor of the next page ("" at the end).
func (s *State) List(prefix, delimiter, cursor string, limit int) ([]ListEntry, string) {
	if limit <= 0 {
		limit = 1000
	}
	skipUnder, after := parseCursor(cursor)
	var out []ListEntry
	next := ""
	start := prefix
	if after > start {
		start = after
	}
	if skipUnder > start {
		start = skipUnder
	}
	s.files.AscendGreaterOrEqual(&File{Path: start}, func(f *File) bool {
		if !strings.HasPrefix(f.Path, prefix) {
			return false
		}
		if f.Path <= after || !f.Exists() || skipUnder != "" && strings.HasPrefix(f.Path, skipUnder) {
			return true
		}
		entry := ListEntry{File: f}
		if delimiter != "" {
			if i := strings.Index(f.Path[len(prefix):], delimiter); i >= 0 {
				entry = ListEntry{Prefix: f.Path[:len(prefix)+i+len(delimiter)]}
				if len(out) > 0 && out[len(out)-1].Prefix == entry.Prefix {
					return true
				}
			}
		}
		if len(out) == limit {
			next = out[len(out)-1].cursor()
			return false
		}
		out = append(out, entry)
		return true
	})
	return out, next
}

// Cursors are opaque to clients: "f:" + path (continue after that path)
// or "p:" + prefix (continue after every path under that prefix). Any
// other string is taken as a path to list after.
func (e ListEntry) cursor() string {
	if e.File != nil {
		return "f:" + e.File.Path
	}
	return "p:" + e.Prefix
}

func parseCursor(c string) (skipUnder, after string) {
	switch {
	case strings.HasPrefix(c, "p:"):
		return c[2:], ""
	case strings.HasPrefix(c, "f:"):
		return "", c[2:]
	}
	return "", c
}

// Targets returns the nodes that should hold a copy of f: every active node
// with full replication, else k nodes: the active valid ones first, then
// the rest by rendezvous hashing of the path, so placement is stable.
func (s *State) Targets(f *File, replicas int) []string {
	active := s.ActiveNodes()
	if replicas <= 0 || replicas >= len(active) {
		return active
	}
	ranked := rendezvous(f.Path, active)
	out := make([]string, 0, replicas)
	for _, id := range ranked {
		if len(out) < replicas && f.IsValidOn(id) {
			out = append(out, id)
		}
	}
	for _, id := range ranked {
		if len(out) < replicas && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Walk calls fn for every record, tombstones included, in path order,
// until fn returns false.
func (s *State) Walk(fn func(f *File) bool) { s.files.Ascend(fn) }

// UnderReplicated counts live, replicated (not suspended) files with fewer
// valid copies on active nodes than the replication factor asks for. A
// suspended file is where its writer wants it; it is not counted.
func (s *State) UnderReplicated(replicas int) int {
	active := s.ActiveNodes()
	want := len(active)
	if replicas > 0 && replicas < want {
		want = replicas
	}
	n := 0
	s.files.Ascend(func(f *File) bool {
		if !f.Exists() || f.Suspended() {
			return true
		}
		have := 0
		for _, id := range f.Valid {
			if _, ok := slices.BinarySearch(active, id); ok {
				have++
			}
		}
		if have < want {
			n++
		}
		return true
	})
	return n
}
