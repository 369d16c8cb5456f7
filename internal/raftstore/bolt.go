package raftstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ImportBolt moves the log and stable store of an older node, kept in a
// bbolt file at path (mure's log store before decision 0019), into s,
// then renames the file to path+".imported". It does nothing when there
// is no such file. s must be empty; the import is one write and one sync,
// so a crash leaves either nothing or everything imported (and a file
// still to rename, which the next start does).
func ImportBolt(path string, s *Store) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	s.mu.RLock()
	empty := len(s.locs) == 0 && len(s.stable) == 0
	s.mu.RUnlock()
	if empty {
		buf, err := readBolt(path)
		if err != nil {
			return err
		}
		s.wmu.Lock()
		err = s.append(buf)
		s.wmu.Unlock()
		if err != nil {
			return fmt.Errorf("import %s: %w", path, err)
		}
	}
	if err := os.Rename(path, path+".imported"); err != nil {
		return fmt.Errorf("import %s: %w", path, err)
	}
	return nil
}

// readBolt frames every entry and stable key of the bbolt file.
func readBolt(path string) ([]byte, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	var buf []byte
	err = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte("conf")); b != nil {
			if err := b.ForEach(func(k, v []byte) error {
				buf = appendRecord(buf, kindSet, setBody(k, v))
				return nil
			}); err != nil {
				return err
			}
		}
		b := tx.Bucket([]byte("logs"))
		if b == nil {
			return nil
		}
		// The bbolt store's entries use the same encoding (codec.go).
		return b.ForEach(func(_, v []byte) error {
			buf = appendRecord(buf, kindEntry, v)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return buf, nil
}
