package store

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// install moves a fully written and fsynced temp file into place as blob
// info.Path/info.ID. It always consumes tmpData: on failure the temp file
// is removed and no trace of the new blob is left (an old blob with the
// same id and different content may be gone, see below).
//
// Order (each step durable before the next when syncing):
//
//  1. write + fsync the sidecar into tmp;
//  2. create the per-path directory (fsync its parent if new);
//  3. if a blob with the same id exists:
//     same size+sum: rename the data over it, fsync dir, done;
//     otherwise: unlink the old data file, fsync dir;
//  4. rename the sidecar into place (fsync dir only if an old blob of this
//     id was unlinked in 3, whose sidecar it replaces);
//  5. rename the data into place (the commit point), fsync dir.
//
// Hence a data file name is never visible next to a sidecar that
// describes other content; after a crash before 5's fsync, Open deletes a
// data file or a sidecar left alone.
func (s *Store) install(tmpData string, info Info) (err error) {
	dataRenamed := false
	defer func() {
		if !dataRenamed {
			s.fs.Remove(tmpData)
		}
	}()
	m := meta{Path: info.Path, ID: info.ID, Size: info.Size, Sum: info.Sum}
	l := s.locate(info.Path)
	tmpMeta, err := s.writeTemp(l, "meta-*", m.encode())
	if err != nil {
		return err
	}
	metaRenamed := false
	defer func() {
		if !metaRenamed {
			s.fs.Remove(tmpMeta)
		}
	}()

	mu := &s.stripes[l.stripe]
	mu.Lock()
	defer mu.Unlock()
	// Runs before Unlock: readers that cached the old content lose it.
	defer s.cache.invalidate(cacheKey{info.Path, info.ID}, l.stripe)
	// The content was hashed as it was written: a committed blob counts
	// as verified, whatever failed a check before under its name.
	defer s.unverified.remove(l, info.ID)

	if _, ok := s.indexGet(l, info.Path, info.ID); ok {
		// The same id as a small blob (committed with a size within
		// SmallMax): its removal is made durable first.
		pos, err := s.removeSmallLocked(l, info.Path, func(id string) bool { return id == info.ID })
		if err == nil {
			err = s.log.waitDurable(pos)
		}
		if err != nil {
			return err
		}
	}
	s.dirAdd(l) // before it may exist
	if err := s.mkdirDurable(l.dir); err != nil {
		return err
	}
	dataName, metaName := l.data(info.ID), l.meta(info.ID)

	replaced := false // an old sidecar of this id is in place
	fi, err := s.fs.Lstat(dataName)
	switch {
	case err == nil:
		old, merr := s.readMeta(metaName)
		if merr == nil && old.Path == m.Path && old.Size == m.Size && old.Sum == m.Sum {
			if err := s.fs.Rename(tmpData, dataName); err != nil {
				return err
			}
			dataRenamed = true // same size: counters unchanged
			return s.syncDirIf(l.dir)
		}
		if err := s.fs.Remove(dataName); err != nil {
			return err
		}
		s.nblobs.Add(-1)
		s.nbytes.Add(-fi.Size())
		if err := s.syncDirIf(l.dir); err != nil {
			return err
		}
		replaced = true
	case !errors.Is(err, fs.ErrNotExist):
		return err
	default:
		// A sidecar left alone (a removal that failed midway) is
		// replaced like an old blob's.
		if _, err := s.fs.Lstat(metaName); err == nil {
			replaced = true
		}
	}

	if err := s.fs.Rename(tmpMeta, metaName); err != nil {
		return err
	}
	metaRenamed = true
	if replaced {
		if err := s.syncDirIf(l.dir); err != nil {
			s.fs.Remove(metaName)
			return err
		}
	}
	if err := s.fs.Rename(tmpData, dataName); err != nil {
		s.fs.Remove(metaName)
		return err
	}
	dataRenamed = true
	if err := s.syncDirIf(l.dir); err != nil {
		// Durability unknown: undo, so that an error means "not committed".
		s.fs.Remove(dataName)
		s.fs.Remove(metaName)
		return err
	}
	s.nblobs.Add(1)
	s.nbytes.Add(m.Size)
	return nil
}

// writeTemp writes b to a new file in l's staging directory (fsynced
// unless NoSync) and returns its name.
func (s *Store) writeTemp(l loc, pattern string, b []byte) (string, error) {
	f, err := s.createTemp(l, pattern)
	if err != nil {
		return "", err
	}
	_, err = f.Write(b)
	if err == nil && s.sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.fs.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func (s *Store) syncDirIf(dir string) error {
	if !s.sync {
		return nil
	}
	return s.fs.SyncDir(dir)
}

// createTemp creates a staging file for a blob of l in dir/tmp/<hh>, the
// staging directory of l's first hash byte, creating it if needed. One
// directory for every writer made concurrent writes queue on its lock in
// the kernel: with 64 writers, creating temp files in it took 44% of the
// node's CPU (docs/benchmarks.md, "The write path against the disk").
func (s *Store) createTemp(l loc, pattern string) (File, error) {
	dir := filepath.Join(s.tmp, filepath.Base(filepath.Dir(l.dir)))
	f, err := s.fs.CreateTemp(dir, pattern)
	if errors.Is(err, fs.ErrNotExist) {
		if err := s.fs.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		f, err = s.fs.CreateTemp(dir, pattern)
	}
	return f, err
}
