package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
)

// On-disk layout (see doc.go):
//
//	<dir>/LOCK                        flock(2)ed while the store is open
//	<dir>/tmp/                        staging area, wiped at Open
//	<dir>/blobs/<hh>/<H>/<id>         blob content, exactly the bytes written
//	<dir>/blobs/<hh>/<H>/<id>.meta    sidecar: path, id, size, sha256
//
// H is the lowercase hex SHA-256 of the path and hh its first two characters.
const (
	blobsDir   = "blobs"
	tmpDir     = "tmp"
	lockFile   = "LOCK"
	metaSuffix = ".meta"
	maxIDLen   = 64
	numStripes = 256 // one per value of the first byte of H
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
	stripe int    // lock stripe and cache generation index
	dir    string // <dir>/blobs/<hh>/<H>
}

func (s *Store) locate(path string) loc {
	sum := sha256.Sum256([]byte(path))
	h := hex.EncodeToString(sum[:])
	return loc{
		stripe: int(sum[0]),
		dir:    filepath.Join(s.blobs, h[:2], h),
	}
}

func (l loc) data(id string) string { return filepath.Join(l.dir, id) }
func (l loc) meta(id string) string { return filepath.Join(l.dir, id+metaSuffix) }

// syncDir fsyncs a directory so that entries created, renamed or removed in
// it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirDurable creates dir if missing and, when it was created (and sync
// is set), fsyncs its parent so the new entry survives a crash.
func mkdirDurable(dir string, sync bool) error {
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if sync {
		return syncDir(filepath.Dir(dir))
	}
	return nil
}
