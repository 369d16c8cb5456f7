package store

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// Remove deletes blobs (path, id) of the ids given, with one directory
// sync. Removing an absent blob is not an error.
func (s *Store) Remove(path string, ids ...string) error {
	for _, id := range ids {
		if !validID(id) {
			return fmt.Errorf("store: remove %q/%q: %w", path, id, ErrBadID)
		}
	}
	return s.removeWhere(path, "remove", func(x string) bool { return slices.Contains(ids, x) })
}

// RemoveExcept deletes every blob of path whose id is not in keep (garbage
// collection of old versions). With no keep ids it removes them all.
func (s *Store) RemoveExcept(path string, keep ...string) error {
	for _, id := range keep {
		if !validID(id) {
			return fmt.Errorf("store: remove-except %q: keep %q: %w", path, id, ErrBadID)
		}
	}
	return s.removeWhere(path, "remove-except", func(x string) bool { return !slices.Contains(keep, x) })
}

// removeWhere deletes the blobs of path whose id satisfies doomed, plus
// orphan sidecars. Data files go first, then sidecars (a crash in between
// leaves orphans that the next Open deletes), then one directory fsync.
func (s *Store) removeWhere(path, op string, doomed func(id string) bool) error {
	end, err := s.begin()
	if err != nil {
		return fmt.Errorf("store: %s %q: %w", op, path, err)
	}
	defer end()
	l := s.locate(path)
	mu := &s.stripes[l.stripe]
	mu.Lock()
	pos, err := s.removeSmallLocked(l, path, doomed)
	if err == nil {
		err = s.removeFiles(l, path, op, doomed)
	} else {
		err = wrapErr(op, path, "", err)
	}
	mu.Unlock()
	// A small blob's removal is durable once its record is.
	if werr := s.log.waitDurable(pos); err == nil && werr != nil {
		err = wrapErr(op, path, "", werr)
	}
	return err
}

// removeFiles deletes the blobs of path in files of their own that doomed
// picks; the caller holds l's stripe lock.
func (s *Store) removeFiles(l loc, path, op string, doomed func(id string) bool) error {
	if !s.dirMay(l) {
		return nil
	}
	ents, err := s.fs.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		delete(s.dirs[l.stripe], l.dir)
		return nil
	}
	if err != nil {
		return wrapErr(op, path, "", err)
	}
	present := make(map[string]bool, len(ents))
	changed := false
	for _, e := range ents {
		id := e.Name()
		if !validID(id) {
			continue
		}
		if !doomed(id) {
			present[id] = true
			continue
		}
		fi, err := s.fs.Lstat(l.data(id))
		if err != nil {
			return wrapErr(op, path, id, err)
		}
		err = s.fs.Remove(l.data(id))
		s.unverified.remove(l, id)
		// Only after the unlink (see cache): a reader that opened the file
		// before it sampled the old generation and cannot insert.
		s.cache.invalidate(cacheKey{path, id}, l.stripe)
		if err != nil {
			return wrapErr(op, path, id, err)
		}
		changed = true
		s.nblobs.Add(-1)
		s.nbytes.Add(-fi.Size())
	}
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), metaSuffix)
		if !ok || present[id] {
			continue
		}
		if err := s.removeIfExists(l.meta(id)); err != nil {
			return wrapErr(op, path, id, err)
		}
		changed = true
	}
	if changed {
		if err := s.syncDirIf(l.dir); err != nil {
			return wrapErr(op, path, "", err)
		}
	}
	if len(present) == 0 && s.fs.Remove(l.dir) == nil { // fails harmlessly if foreign files remain
		delete(s.dirs[l.stripe], l.dir)
	}
	return nil
}
