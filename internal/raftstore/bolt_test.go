package raftstore

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// writeBolt writes a log as the bbolt store before decision 0019 did.
func writeBolt(t *testing.T, path string, from, to uint64, term uint64) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	must(t, err)
	defer db.Close()
	must(t, db.Update(func(tx *bolt.Tx) error {
		logs, err := tx.CreateBucketIfNotExists([]byte("logs"))
		if err != nil {
			return err
		}
		conf, err := tx.CreateBucketIfNotExists([]byte("conf"))
		if err != nil {
			return err
		}
		for _, l := range entries(from, to, 1) {
			if err := logs.Put(binary.BigEndian.AppendUint64(nil, l.Index), appendEntry(nil, l)); err != nil {
				return err
			}
		}
		return conf.Put([]byte("CurrentTerm"), binary.BigEndian.AppendUint64(nil, term))
	}))
}

func TestImportBolt(t *testing.T) {
	tmp := t.TempDir()
	old := filepath.Join(tmp, "raft.db")
	writeBolt(t, old, 5, 9, 3)
	dir := filepath.Join(tmp, "log")
	s := openT(t, dir, Options{})
	must(t, ImportBolt(old, s))
	check := func(s *Store) {
		t.Helper()
		checkLog(t, s, 5, 9, nil)
		if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 3 {
			t.Fatalf("CurrentTerm = %d, %v", v, err)
		}
	}
	check(s)
	if _, err := os.Stat(old + ".imported"); err != nil {
		t.Fatalf("the bbolt file was not set aside: %v", err)
	}
	must(t, ImportBolt(old, s)) // nothing left to import
	s.Close()
	s = openT(t, dir, Options{})
	check(s)
	// A crash after the import but before the rename: the next start
	// only renames (the store is not empty).
	writeBolt(t, old, 1, 2, 9)
	must(t, ImportBolt(old, s))
	check(s)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("bbolt file still in place: %v", err)
	}
}
