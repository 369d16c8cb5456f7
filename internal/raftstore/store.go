package raftstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
)

var (
	bucketLogs = []byte("logs")
	bucketConf = []byte("conf")

	// ErrKeyNotFound is what raft expects (it compares the message) for a
	// stable-store key never set.
	ErrKeyNotFound = errors.New("not found")
)

// Store implements raft.LogStore and raft.StableStore.
type Store struct {
	db *bolt.DB
}

var (
	_ raft.LogStore    = (*Store)(nil)
	_ raft.StableStore = (*Store)(nil)
)

// Open opens (creating if needed) the store file at path.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open raft store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketLogs, bucketConf} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("init raft store %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// FirstIndex implements raft.LogStore.
func (s *Store) FirstIndex() (uint64, error) {
	return s.edge(func(c *bolt.Cursor) ([]byte, []byte) { return c.First() })
}

// LastIndex implements raft.LogStore.
func (s *Store) LastIndex() (uint64, error) {
	return s.edge(func(c *bolt.Cursor) ([]byte, []byte) { return c.Last() })
}

func (s *Store) edge(move func(*bolt.Cursor) ([]byte, []byte)) (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := move(tx.Bucket(bucketLogs).Cursor()); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// GetLog implements raft.LogStore.
func (s *Store) GetLog(index uint64, log *raft.Log) error {
	return s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLogs).Get(key(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		return decode(v, log)
	})
}

// StoreLog implements raft.LogStore.
func (s *Store) StoreLog(log *raft.Log) error { return s.StoreLogs([]*raft.Log{log}) }

// StoreLogs implements raft.LogStore: one fsynced transaction.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLogs)
		for _, l := range logs {
			if err := b.Put(key(l.Index), encode(l)); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteRange implements raft.LogStore (inclusive range).
func (s *Store) DeleteRange(min, max uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketLogs).Cursor()
		for k, _ := c.Seek(key(min)); k != nil && binary.BigEndian.Uint64(k) <= max; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Set implements raft.StableStore.
func (s *Store) Set(k, v []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketConf).Put(k, v) })
}

// Get implements raft.StableStore.
func (s *Store) Get(k []byte) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketConf).Get(k)
		if v == nil {
			return ErrKeyNotFound
		}
		out = bytes.Clone(v)
		return nil
	})
	return out, err
}

// SetUint64 implements raft.StableStore.
func (s *Store) SetUint64(k []byte, v uint64) error { return s.Set(k, key(v)) }

// GetUint64 implements raft.StableStore.
func (s *Store) GetUint64(k []byte) (uint64, error) {
	v, err := s.Get(k)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raft store: %q holds %d bytes, not a uint64", k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func key(i uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], i)
	return b[:]
}
