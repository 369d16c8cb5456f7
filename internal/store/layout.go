package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// On-disk layout (see doc.go):
//
//	<dir>/LOCK                        flock(2)ed while the store is open
//	<dir>/tmp/<hh>/                   staging, by the path's hh; wiped at Open
//	<dir>/blobs/<hh>/<H>/<id>         blob content, exactly the bytes written
//	<dir>/blobs/<hh>/<H>/<id>.meta    sidecar: path, id, size, sha256
//	<dir>/quarantine/<H>-<id>[.meta]  blobs that failed a check, kept for inspection
//
// H is the lowercase hex SHA-256 of the path and hh its first two characters.
const (
	blobsDir      = "blobs"
	tmpDir        = "tmp"
	quarantineDir = "quarantine"
	lockFile      = "LOCK"
	metaSuffix    = ".meta"
	maxIDLen      = 64
	numStripes    = 256 // one per value of the first byte of H
)

// validID reports whether id is 1..64 bytes of [0-9a-zA-Z_-]. Because '.' is
// not allowed, an id can never collide with a sidecar name, "." or "..".
func validID(id string) bool {
	if len(id) == 0 || len(id) > maxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// loc is where a path's blobs live on disk.
type loc struct {
	stripe int     // lock stripe and cache generation index
	dir    string  // <dir>/blobs/<hh>/<H>
	key    pathKey // the small blobs' index key
}

// pathKey is the first 16 bytes of the path's SHA-256.
type pathKey [16]byte

func (s *Store) locate(path string) loc {
	sum := sha256.Sum256([]byte(path))
	h := hex.EncodeToString(sum[:])
	return loc{
		stripe: int(sum[0]),
		dir:    filepath.Join(s.blobs, h[:2], h),
		key:    pathKey(sum[:16]),
	}
}

// locDir is the loc of a per-path directory found on disk.
func locDir(dir string) (loc, error) {
	b, err := hex.DecodeString(filepath.Base(dir)[:2])
	if err != nil || len(b) != 1 {
		return loc{}, fmt.Errorf("%s: not a per-path directory", dir)
	}
	return loc{stripe: int(b[0]), dir: dir}, nil
}

// hash is the H of the per-path directory (hex SHA-256 of the path).
func (l loc) hash() string { return filepath.Base(l.dir) }

func (l loc) data(id string) string { return filepath.Join(l.dir, id) }
func (l loc) meta(id string) string { return filepath.Join(l.dir, id+metaSuffix) }

// mkdirDurable creates dir if missing and, when it was created (and sync
// is set), fsyncs its parent so the new entry survives a crash.
func (s *Store) mkdirDurable(dir string) error {
	err := s.fs.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.syncDirIf(filepath.Dir(dir))
}

// A path's directory blobs/<hh>/<H> holds its blobs in files of their
// own; most paths, with only small blobs, have none. s.dirs[i] lists the
// directories of stripe i that may exist (guarded by stripes[i]): a
// directory is added before it is created and deleted once it is
// removed, so one not listed certainly does not exist, and the small
// blobs' paths skip looking for it.

// dirMay reports whether l's directory may exist. Caller holds l's stripe
// lock.
func (s *Store) dirMay(l loc) bool {
	_, ok := s.dirs[l.stripe][l.dir]
	return ok
}

// dirAdd lists l's directory as one that may exist. Caller holds l's
// stripe lock for writing (or is Open).
func (s *Store) dirAdd(l loc) {
	if s.dirs[l.stripe] == nil {
		s.dirs[l.stripe] = make(map[string]struct{})
	}
	s.dirs[l.stripe][l.dir] = struct{}{}
}
