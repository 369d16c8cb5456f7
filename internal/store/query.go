package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Stat returns the blob's size and checksum (from its sidecar, or a small
// blob's record header) without reading the content. A sidecar that does not match the data file's size
// yields an error wrapping ErrChecksum.
func (s *Store) Stat(path, id string) (Info, error) {
	if !validID(id) {
		return Info{}, fmt.Errorf("store: stat %q/%q: %w", path, id, ErrBadID)
	}
	if s.closed.Load() {
		return Info{}, fmt.Errorf("store: stat %q/%s: %w", path, id, ErrClosed)
	}
	l := s.locate(path)
	if info, ok, err := s.statSmall(l, path, id); ok {
		if err != nil {
			return Info{}, wrapErr("stat", path, id, err)
		}
		return info, nil
	}
	mu := &s.stripes[l.stripe]
	mu.RLock()
	defer mu.RUnlock()
	fi, err := s.fs.Lstat(l.data(id))
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, notFound("stat", path, id)
	}
	if err != nil {
		return Info{}, wrapErr("stat", path, id, err)
	}
	info, err := s.info(l.dir, id, fi)
	if err == nil && info.Path != path {
		err = fmt.Errorf("%w: sidecar names path %q", ErrChecksum, info.Path)
	}
	if err != nil {
		return Info{}, wrapErr("stat", path, id, err)
	}
	return info, nil
}

// info reads the sidecar of the data file fi in dir and checks that it
// describes it. Caller holds the stripe lock.
func (s *Store) info(dir, id string, fi fs.FileInfo) (Info, error) {
	m, err := s.readMeta(filepath.Join(dir, id+metaSuffix))
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("%w: sidecar missing", ErrChecksum)
	}
	if err != nil {
		return Info{}, err
	}
	if m.ID != id || m.Size != fi.Size() {
		// What the sidecar says goes with the error: a check that fails
		// still knows the blob's path.
		return Info{Path: m.Path, ID: m.ID, Size: m.Size, Sum: m.Sum}, fmt.Errorf("%w: sidecar says id %s size %d, data file is %s size %d",
			ErrChecksum, m.ID, m.Size, id, fi.Size())
	}
	return Info{Path: m.Path, ID: id, Size: m.Size, Sum: m.Sum, ModTime: fi.ModTime()}, nil
}

// listDir returns the blobs in one per-path directory, sorted by id.
// Caller holds the stripe lock.
func (s *Store) listDir(dir string) ([]Info, error) {
	ents, err := s.fs.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range ents {
		if !validID(e.Name()) || !e.Type().IsRegular() {
			continue // sidecars and foreign files
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		info, err := s.info(dir, e.Name(), fi)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if s.locate(info.Path).dir != dir {
			return nil, fmt.Errorf("%s: %w: sidecar path %q does not hash to %s", e.Name(), ErrChecksum, info.Path, dir)
		}
		out = append(out, info)
	}
	return out, nil
}

// List returns the committed blobs of path, sorted by id (nil if none).
func (s *Store) List(path string) ([]Info, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("store: list %q: %w", path, ErrClosed)
	}
	l := s.locate(path)
	mu := &s.stripes[l.stripe]
	mu.RLock()
	infos, err := s.listDir(l.dir)
	for _, e := range s.small[l.stripe][l.key] {
		if err != nil {
			break
		}
		var rec record
		if rec, err = s.headOf(path, e); err == nil {
			infos = append(infos, smallInfo(&rec, path, e.id))
		}
	}
	mu.RUnlock()
	if err != nil {
		return nil, wrapErr("list", path, "", err)
	}
	slices.SortFunc(infos, func(a, b Info) int { return strings.Compare(a.ID, b.ID) })
	return infos, nil
}

// IDs returns the IDs of path's blobs, sorted, from the directory's names
// alone: no sidecar is read or checked, so it is cheap enough to call at
// every change of a path (garbage collection), where List would read one
// sidecar per blob. A blob whose commit is in progress may be listed.
func (s *Store) IDs(path string) ([]string, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("store: ids %q: %w", path, ErrClosed)
	}
	l := s.locate(path)
	mu := &s.stripes[l.stripe]
	mu.RLock()
	ids := s.smallIDs(l, nil)
	var ents []fs.DirEntry
	var err error
	if s.dirMay(l) {
		ents, err = s.fs.ReadDir(l.dir)
	}
	mu.RUnlock()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, wrapErr("ids", path, "", err)
	}
	for _, e := range ents {
		if validID(e.Name()) && e.Type().IsRegular() {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// Walk calls fn for every committed blob, with its original path, grouped
// by path in hash order (not sorted by path). fn may call any Store
// method: no lock is held while it runs. Blobs committed or removed during
// the walk may or may not be seen. An error from fn stops the walk and is
// returned as is.
func (s *Store) Walk(fn func(Info) error) error {
	if s.closed.Load() {
		return fmt.Errorf("store: walk: %w", ErrClosed)
	}
	var cbErr error
	err := s.eachPathDir(func(dir string) error {
		stripe, err := strconv.ParseUint(filepath.Base(dir)[:2], 16, 8)
		if err != nil {
			return err
		}
		mu := &s.stripes[stripe]
		mu.RLock()
		infos, err := s.listDir(dir)
		mu.RUnlock()
		if err != nil {
			return err
		}
		for _, info := range infos {
			if err := fn(info); err != nil {
				cbErr = err
				return err
			}
		}
		return nil
	})
	if cbErr != nil {
		return cbErr
	}
	if err != nil {
		return fmt.Errorf("store: walk: %w", err)
	}
	return s.eachSmall(func(l loc, path, id string) error {
		if info, ok, err := s.statSmall(l, path, id); ok && err == nil {
			return fn(info)
		}
		return nil // removed meanwhile, or corrupt (now in quarantine)
	})
}

// eachSmall calls fn for every small blob, stripe by stripe, with no lock
// held. Blobs whose path cannot be read (corrupt headers) are skipped.
func (s *Store) eachSmall(fn func(l loc, path, id string) error) error {
	type blob struct{ path, id string }
	var blobs []blob
	for i := range s.small {
		blobs = blobs[:0]
		s.stripes[i].RLock()
		for _, es := range s.small[i] {
			for _, e := range es {
				if rec, err := s.readHead(e); err == nil {
					blobs = append(blobs, blob{rec.path, e.id})
				}
			}
		}
		s.stripes[i].RUnlock()
		for _, b := range blobs {
			if err := fn(s.locate(b.path), b.path, b.id); err != nil {
				return err
			}
		}
	}
	return nil
}
