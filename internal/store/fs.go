package store

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// FS is the file-system seam of a Store: every file and directory
// operation the store makes goes through it, so that tests can run a store
// on a disk that loses power (internal/store/crashfs). Names are absolute
// or relative to the process's working directory, as with package os.
// The default, OS(), is package os itself: the files it returns are
// *os.File, which keeps sendfile for reads.
type FS interface {
	// Open opens a file for reading.
	Open(name string) (File, error)
	// CreateTemp creates a new file for reading and writing in dir, like
	// os.CreateTemp.
	CreateTemp(dir, pattern string) (File, error)
	// Rename replaces newpath by oldpath atomically, like os.Rename.
	Rename(oldpath, newpath string) error
	// Remove deletes a file or an empty directory.
	Remove(name string) error
	// Mkdir creates a directory; an existing one is fs.ErrExist.
	Mkdir(name string, perm fs.FileMode) error
	// ReadDir lists a directory, sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Lstat describes a name without following a symbolic link.
	Lstat(name string) (fs.FileInfo, error)
	// SyncDir makes the entries created, renamed and removed in a
	// directory durable (fsync of the directory).
	SyncDir(name string) error
	// Lock takes an exclusive lock named by a file, held until the
	// returned Closer is closed; a lock held elsewhere is an error.
	Lock(name string) (io.Closer, error)
}

// File is an open file of an FS. Sync makes its content durable.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Seeker
	io.Closer
	Name() string
	Stat() (fs.FileInfo, error)
	Sync() error
}

// OS returns the FS of the operating system (package os).
func OS() FS { return osFS{} }

type osFS struct{}

func (osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err // not a typed nil in an interface
	}
	return f, nil
}

func (osFS) CreateTemp(dir, pattern string) (File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Rename(oldpath, newpath string) error       { return os.Rename(oldpath, newpath) }
func (osFS) Remove(name string) error                   { return os.Remove(name) }
func (osFS) Mkdir(name string, perm fs.FileMode) error  { return os.Mkdir(name, perm) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }
func (osFS) Lstat(name string) (fs.FileInfo, error)     { return os.Lstat(name) }

func (osFS) Lock(name string) (io.Closer, error) {
	f, err := lockDir(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirAll creates dir and its missing parents through fsys.
func mkdirAll(fsys FS, dir string) error {
	if fi, err := fsys.Lstat(dir); err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrExist}
		}
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirAll(fsys, parent); err != nil {
			return err
		}
	}
	err := fsys.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// removeAll deletes name and, for a directory, everything under it.
func removeAll(fsys FS, name string) error {
	err := fsys.Remove(name)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	ents, rerr := fsys.ReadDir(name)
	if rerr != nil {
		return err // not a directory: the first error is the one
	}
	for _, e := range ents {
		if err := removeAll(fsys, filepath.Join(name, e.Name())); err != nil {
			return err
		}
	}
	return fsys.Remove(name)
}

// readFile reads a whole (small) file through fsys.
func readFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
