// Package crashfs is a store.FS on a real directory that can lose power.
//
// It passes every operation through to package os and records what a
// real disk would keep after a power failure: the content of a file as of
// its last Sync, and the entries of a directory (creations, renames,
// removals) as of its last SyncDir. Crash rewrites the directory to
// exactly that state, discarding everything else, and returns the FS of
// the "rebooted" machine; the old FS and every file opened through it
// fail from then on with ErrPowerLoss, as if the process had died with
// the machine.
//
// The model is the strict one that catches a missing fsync: nothing that
// was not made durable survives. (A real disk may keep some of it, or
// parts of it; a program correct under this model must not rely on
// either. TearTails adds the parts: a torn append.) A file whose entry is durable but whose content was never
// synced comes back empty. Sync and SyncDir do not call fsync(2): the
// machine does not really lose power, so only the model matters, and
// tests stay fast.
//
// Paths must lie under the root given to New, except that Lstat and
// SyncDir accept the root's parents (the root itself is durable). Locks
// are held in memory, per FS.
package crashfs

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mure-dev/mure/internal/store"
)

// ErrPowerLoss is returned by every operation after the power was lost.
var ErrPowerLoss = errors.New("crashfs: power lost")

// FS is a store.FS whose durable state is tracked (see the package
// comment). It is safe for concurrent use; operations are serialised.
type FS struct {
	root string

	mu      sync.Mutex
	top     *node
	dead    bool
	ops     int // mutating operations so far
	crashAt int // lose power before mutating operation number crashAt (0: never)
	locks   map[string]bool
	tear    *rand.Rand // non-nil: Crash tears unsynced tails (TearTails)
}

// node is a file or a directory of the model.
type node struct {
	dir     bool
	content []byte           // file: content as of its last Sync
	cur     map[string]*node // directory: entries now
	durable map[string]*node // directory: entries as of its last SyncDir
	latest  []byte           // file, at a crash with TearTails: content then
}

func newDir() *node {
	return &node{dir: true, cur: map[string]*node{}, durable: map[string]*node{}}
}

// New returns an FS rooted at root, creating it if needed. Whatever root
// already holds counts as durable.
func New(root string) (*FS, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("crashfs: %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("crashfs: %w", err)
	}
	top, err := load(root)
	if err != nil {
		return nil, fmt.Errorf("crashfs: load %s: %w", root, err)
	}
	return &FS{root: root, top: top, locks: map[string]bool{}}, nil
}

// load reads the tree under dir into a durable model.
func load(dir string) (*node, error) {
	n := newDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		var c *node
		switch {
		case e.IsDir():
			if c, err = load(p); err != nil {
				return nil, err
			}
		case e.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			c = &node{content: b}
		default:
			continue
		}
		n.cur[e.Name()], n.durable[e.Name()] = c, c
	}
	return n, nil
}

// Root is the directory the FS works in.
func (f *FS) Root() string { return f.root }

// CrashAfter arms a power loss: the FS loses power right before its n-th
// mutating operation from now (create, write, sync, rename, remove, mkdir,
// directory sync), which fails, like every later one, with ErrPowerLoss.
// Call Crash afterwards to get the disk as it came back.
func (f *FS) CrashAfter(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashAt = f.ops + n
}

// Ops is the number of mutating operations so far.
func (f *FS) Ops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops
}

// TearTails makes Crash keep part of what was written to a file since its
// last Sync, as a disk that wrote some pages and the new size but not all
// the data. It applies to a file that grew from its synced content, and
// to one whose writes since fell where the synced content held only zeros
// (a log that writes zeros ahead of its appends): Crash keeps the bytes
// both share, a random prefix of what was written after them, then zero
// bytes up to the size the file had (half the time) or a random number of
// them, never shorter than the synced size. Files rewritten otherwise
// come back as synced. Seeded, so a run can be repeated.
func (f *FS) TearTails(seed uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tear = rand.New(rand.NewPCG(seed, 1))
}

// readLatest records in latest the content every file of n has now.
func readLatest(path string, n *node) error {
	for name, c := range n.cur {
		p := filepath.Join(path, name)
		if c.dir {
			if err := readLatest(p, c); err != nil {
				return err
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		c.latest = b
	}
	return nil
}

// torn is what a torn write leaves of n: its synced content and part of
// what was written since (TearTails).
func (f *FS) torn(n *node) []byte {
	old, now := n.content, n.latest
	c := 0 // bytes old and now share
	for c < len(old) && c < len(now) && old[c] == now[c] {
		c++
	}
	grown := len(now) - c
	if f.tear == nil || grown <= 0 || !allZero(old[c:]) {
		return old
	}
	kept := f.tear.IntN(grown + 1)
	zeros := grown - kept // the size made it, not all the data
	if f.tear.IntN(2) == 0 {
		zeros = f.tear.IntN(zeros + 1)
	}
	b := append([]byte(nil), now[:c+kept]...)
	b = append(b, make([]byte, zeros)...)
	if len(b) < len(old) {
		b = append(b, make([]byte, len(old)-len(b))...) // the synced size stays
	}
	return b
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Crash cuts the power (if CrashAfter has not already), rewrites the
// directory to its durable state and returns the FS of the rebooted
// machine over it. f stays dead.
func (f *FS) Crash() (*FS, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dead = true
	if f.tear != nil {
		if err := readLatest(f.root, f.top); err != nil {
			return nil, fmt.Errorf("crashfs: crash: %w", err)
		}
	}
	top := f.durableCopy(f.top)
	ents, err := os.ReadDir(f.root)
	if err != nil {
		return nil, fmt.Errorf("crashfs: crash: %w", err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(f.root, e.Name())); err != nil {
			return nil, fmt.Errorf("crashfs: crash: %w", err)
		}
	}
	if err := materialize(f.root, top); err != nil {
		return nil, fmt.Errorf("crashfs: crash: %w", err)
	}
	return &FS{root: f.root, top: top, locks: map[string]bool{}}, nil
}

// durableCopy is the tree a power loss leaves of n.
func (f *FS) durableCopy(n *node) *node {
	if !n.dir {
		return &node{content: f.torn(n)}
	}
	c := newDir()
	for name, child := range n.durable {
		cc := f.durableCopy(child)
		c.cur[name], c.durable[name] = cc, cc
	}
	return c
}

// materialize writes the entries of dir n into the real directory path.
func materialize(path string, n *node) error {
	for name, c := range n.cur {
		p := filepath.Join(path, name)
		if c.dir {
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			if err := materialize(p, c); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(p, c.content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// begin is called, with f.mu held, by every operation; mutating ones
// count and may be where the power goes.
func (f *FS) begin(mutating bool) error {
	if f.dead {
		return ErrPowerLoss
	}
	if !mutating {
		return nil
	}
	f.ops++
	if f.crashAt > 0 && f.ops >= f.crashAt {
		f.dead = true
		return ErrPowerLoss
	}
	return nil
}

var errOutside = errors.New("crashfs: path outside the root")

// lookup resolves name to its directory node and base name.
func (f *FS) lookup(name string) (parent *node, base string, err error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, "", err
	}
	rel, err := filepath.Rel(f.root, abs)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, "", fmt.Errorf("%s: %w", name, errOutside)
	}
	parts := strings.Split(rel, string(filepath.Separator))
	dir := f.top
	for _, p := range parts[:len(parts)-1] {
		next := dir.cur[p]
		if next == nil || !next.dir {
			return nil, "", &fs.PathError{Op: "lookup", Path: name, Err: fs.ErrNotExist}
		}
		dir = next
	}
	return dir, parts[len(parts)-1], nil
}

// dirNode resolves a directory; the root's parents give nil.
func (f *FS) dirNode(name string) (*node, error) {
	if abs, err := filepath.Abs(name); err == nil && abs == f.root {
		return f.top, nil
	}
	parent, base, err := f.lookup(name)
	if errors.Is(err, errOutside) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n := parent.cur[base]
	if n == nil || !n.dir {
		return nil, &fs.PathError{Op: "syncdir", Path: name, Err: fs.ErrNotExist}
	}
	return n, nil
}

var _ store.FS = (*FS)(nil)
