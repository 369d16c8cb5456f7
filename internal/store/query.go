package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Stat returns the blob's size and checksum (from its sidecar) without
// reading the content. A sidecar that does not match the data file's size
// yields an error wrapping ErrChecksum.
func (s *Store) Stat(path, id string) (Info, error) {
	if !validID(id) {
		return Info{}, fmt.Errorf("store: stat %q/%q: %w", path, id, ErrBadID)
	}
	if s.closed.Load() {
		return Info{}, fmt.Errorf("store: stat %q/%s: %w", path, id, ErrClosed)
	}
	l := s.locate(path)
	mu := &s.stripes[l.stripe]
	mu.RLock()
	defer mu.RUnlock()
	fi, err := os.Lstat(l.data(id))
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
	m, err := readMeta(filepath.Join(dir, id+metaSuffix))
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("%w: sidecar missing", ErrChecksum)
	}
	if err != nil {
		return Info{}, err
	}
	if m.ID != id || m.Size != fi.Size() {
		return Info{}, fmt.Errorf("%w: sidecar says id %s size %d, data file is %s size %d",
			ErrChecksum, m.ID, m.Size, id, fi.Size())
	}
	return Info{Path: m.Path, ID: id, Size: m.Size, Sum: m.Sum, ModTime: fi.ModTime()}, nil
}

// listDir returns the blobs in one per-path directory, sorted by id.
// Caller holds the stripe lock.
func (s *Store) listDir(dir string) ([]Info, error) {
	ents, err := os.ReadDir(dir)
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
	mu.RUnlock()
	if err != nil {
		return nil, wrapErr("list", path, "", err)
	}
	return infos, nil
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
	return nil
}

// Verify re-reads the blob and compares it with the size and SHA-256
// recorded at commit. A mismatch returns an error wrapping ErrChecksum
// (with both sums) and drops the blob from the memory cache. The content is
// hashed without holding any lock.
func (s *Store) Verify(path, id string) error {
	if !validID(id) {
		return fmt.Errorf("store: verify %q/%q: %w", path, id, ErrBadID)
	}
	if s.closed.Load() {
		return fmt.Errorf("store: verify %q/%s: %w", path, id, ErrClosed)
	}
	l := s.locate(path)
	mu := &s.stripes[l.stripe]
	mu.RLock()
	f, err := os.Open(l.data(id))
	var info Info
	if err == nil {
		var fi fs.FileInfo
		if fi, err = f.Stat(); err == nil {
			info, err = s.info(l.dir, id, fi)
		}
		if err != nil {
			f.Close()
		}
	}
	mu.RUnlock()
	if errors.Is(err, fs.ErrNotExist) {
		return notFound("verify", path, id)
	}
	if err != nil {
		return wrapErr("verify", path, id, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return wrapErr("verify", path, id, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != info.Sum || n != info.Size {
		s.cache.invalidate(cacheKey{path, id}, l.stripe)
		return fmt.Errorf("store: verify %q/%s: %w: want sha256 %s size %d, got sha256 %s size %d",
			path, id, ErrChecksum, info.Sum, info.Size, sum, n)
	}
	return nil
}
