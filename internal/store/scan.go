package store

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
)

// cleanTmp deletes everything in dir/tmp: staging files of writers that
// never committed (crash, kill, or an un-Aborted Writer).
func (s *Store) cleanTmp() error {
	ents, err := s.fs.ReadDir(s.tmp)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := removeAll(s.fs, filepath.Join(s.tmp, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// scan restores the invariants after a crash and computes the counters:
// a sidecar without its data file is removed (commit or removal
// interrupted), as is a data file without its sidecar (removal
// interrupted; see doc.go). Empty per-path directories are removed.
// Every blob found is to be verified before it is served.
func (s *Store) scan() error {
	var nblobs, nbytes int64
	err := s.eachPathDir(func(dir string) error {
		l, err := locDir(dir)
		if err != nil {
			return err
		}
		ents, err := s.fs.ReadDir(dir)
		if err != nil {
			return err
		}
		data := make(map[string]fs.DirEntry, len(ents)/2)
		metas := make(map[string]bool, len(ents)/2)
		for _, e := range ents {
			name := e.Name()
			if id, ok := strings.CutSuffix(name, metaSuffix); ok && validID(id) {
				metas[id] = true
			} else if validID(name) && e.Type().IsRegular() {
				data[name] = e
			}
		}
		removed, kept := false, 0
		for id, e := range data {
			if !metas[id] {
				if err := s.removeIfExists(filepath.Join(dir, id)); err != nil {
					return err
				}
				removed = true
				continue
			}
			fi, err := e.Info()
			if err != nil {
				return err
			}
			kept++
			nblobs++
			nbytes += fi.Size()
			s.unverified.add(l, id)
		}
		for id := range metas {
			if _, ok := data[id]; !ok {
				if err := s.removeIfExists(filepath.Join(dir, id+metaSuffix)); err != nil {
					return err
				}
				removed = true
			}
		}
		if removed {
			if err := s.syncDirIf(dir); err != nil {
				return err
			}
		}
		if kept > 0 {
			s.dirAdd(l)
		}
		if kept == 0 {
			_ = s.fs.Remove(dir) // fails harmlessly if unknown files remain
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.nblobs.Add(nblobs)
	s.nbytes.Add(nbytes)
	return nil
}

// eachPathDir calls fn for every per-path directory blobs/<hh>/<H>.
func (s *Store) eachPathDir(fn func(dir string) error) error {
	fans, err := s.fs.ReadDir(s.blobs)
	if err != nil {
		return err
	}
	for _, fan := range fans {
		if !fan.IsDir() || len(fan.Name()) != 2 {
			continue
		}
		fanDir := filepath.Join(s.blobs, fan.Name())
		dirs, err := s.fs.ReadDir(fanDir)
		if err != nil {
			return err
		}
		for _, d := range dirs {
			if !d.IsDir() || !validSum(d.Name()) {
				continue
			}
			if err := fn(filepath.Join(fanDir, d.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Store) removeIfExists(name string) error {
	err := s.fs.Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
