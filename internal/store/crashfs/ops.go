package crashfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mure-dev/mure/internal/store"
)

// Open opens a file for reading.
func (f *FS) Open(name string) (store.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(false); err != nil {
		return nil, err
	}
	of, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return &file{fs: f, f: of}, nil
}

// CreateTemp creates a new file in dir, like os.CreateTemp.
func (f *FS) CreateTemp(dir, pattern string) (store.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(true); err != nil {
		return nil, err
	}
	d, err := f.dirNode(dir)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("create in %s: %w", dir, errOutside)
	}
	of, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	n := &node{}
	d.cur[filepath.Base(of.Name())] = n
	return &file{fs: f, f: of, n: n}, nil
}

// Rename moves oldpath to newpath, replacing it.
func (f *FS) Rename(oldpath, newpath string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(true); err != nil {
		return err
	}
	po, bo, err := f.lookup(oldpath)
	if err != nil {
		return err
	}
	pn, bn, err := f.lookup(newpath)
	if err != nil {
		return err
	}
	if err := os.Rename(oldpath, newpath); err != nil {
		return err
	}
	n := po.cur[bo]
	delete(po.cur, bo)
	pn.cur[bn] = n
	return nil
}

// Remove deletes a file or an empty directory.
func (f *FS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(true); err != nil {
		return err
	}
	parent, base, err := f.lookup(name)
	if err != nil {
		return err
	}
	if err := os.Remove(name); err != nil {
		return err
	}
	delete(parent.cur, base)
	return nil
}

// Mkdir creates a directory.
func (f *FS) Mkdir(name string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(true); err != nil {
		return err
	}
	parent, base, err := f.lookup(name)
	if err != nil {
		return err
	}
	if err := os.Mkdir(name, perm); err != nil {
		return err
	}
	parent.cur[base] = newDir()
	return nil
}

// ReadDir lists a directory.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(false); err != nil {
		return nil, err
	}
	return os.ReadDir(name)
}

// Lstat describes a name.
func (f *FS) Lstat(name string) (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(false); err != nil {
		return nil, err
	}
	return os.Lstat(name)
}

// SyncDir makes a directory's entries durable: from now on a crash
// leaves exactly its entries of this moment (each with the content it
// has itself made durable).
func (f *FS) SyncDir(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(true); err != nil {
		return err
	}
	d, err := f.dirNode(name)
	if err != nil || d == nil {
		return err // the root's parents: nothing to record
	}
	d.durable = make(map[string]*node, len(d.cur))
	for k, v := range d.cur {
		d.durable[k] = v
	}
	return nil
}

// Lock takes an in-memory lock named name, held until closed.
func (f *FS) Lock(name string) (io.Closer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin(false); err != nil {
		return nil, err
	}
	if f.locks[name] {
		return nil, fmt.Errorf("%s is locked: directory in use by another store", name)
	}
	f.locks[name] = true
	return closerFunc(func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.locks, name)
		return nil
	}), nil
}

type closerFunc func() error

func (c closerFunc) Close() error { return c() }

// file is a file opened through an FS; n is its node when it was created
// through the FS (written files), nil for files opened for reading.
type file struct {
	fs *FS
	f  *os.File
	n  *node
}

func (h *file) do(mutating bool, op func() error) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.fs.begin(mutating); err != nil {
		return err
	}
	return op()
}

func (h *file) Read(p []byte) (n int, err error) {
	err = h.do(false, func() error { n, err = h.f.Read(p); return err })
	return n, err
}

func (h *file) ReadAt(p []byte, off int64) (n int, err error) {
	err = h.do(false, func() error { n, err = h.f.ReadAt(p, off); return err })
	return n, err
}

func (h *file) Write(p []byte) (n int, err error) {
	err = h.do(true, func() error { n, err = h.f.Write(p); return err })
	return n, err
}

func (h *file) WriteAt(p []byte, off int64) (n int, err error) {
	err = h.do(true, func() error { n, err = h.f.WriteAt(p, off); return err })
	return n, err
}

func (h *file) Seek(off int64, whence int) (pos int64, err error) {
	err = h.do(false, func() error { pos, err = h.f.Seek(off, whence); return err })
	return pos, err
}

func (h *file) Stat() (fi fs.FileInfo, err error) {
	err = h.do(false, func() error { fi, err = h.f.Stat(); return err })
	return fi, err
}

// Sync records the file's content as durable: its bytes and its size,
// which is what fsync(2) and fdatasync(2) both promise (store.Datasync
// calls Sync on a crashfs file).
func (h *file) Sync() error {
	return h.do(true, func() error {
		if h.n == nil {
			return errors.New("crashfs: sync of a file opened for reading")
		}
		fi, err := h.f.Stat()
		if err != nil {
			return err
		}
		b := make([]byte, fi.Size())
		if _, err := h.f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		h.n.content = b
		return nil
	})
}

// Close closes the descriptor, also after a power loss.
func (h *file) Close() error { return h.f.Close() }

// Name is the name the file was opened or created with.
func (h *file) Name() string { return h.f.Name() }
