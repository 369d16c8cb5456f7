// Package purge records the caching proxy's purges in the replicated
// state, the namespace "cache" (decision 0012): a purge issued through
// any node is a raft entry, so a node that was down when it was issued
// learns it on its return and removes what it stored before it.
//
// The part is deterministic: a record carries the proposer's time, never
// the applier's, and the list is bounded (the oldest records go first).
package purge

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// NS is the namespace of the purge records; Version the highest op
// version this binary applies.
const (
	NS      = "cache"
	Version = 1
)

// OpPurge is the namespace's one op kind.
const OpPurge = "purge"

// MaxRecords bounds the records kept: a node that stays down through more
// purges than this may keep objects purged by the oldest of them (until
// they go stale).
const MaxRecords = 10000

// ErrBadPurge: a purge without a key.
var ErrBadPurge = errors.New("cache purge: a key or a prefix is required")

// Record is one purge: every object whose cache key is Key (or starts
// with it, with Prefix) and that was stored before Time is removed.
type Record struct {
	// Seq is the raft index that applied the purge: records are in Seq
	// order, and a node remembers the last it acted on.
	Seq    uint64    `json:"seq"`
	Key    string    `json:"key"`
	Prefix bool      `json:"prefix,omitempty"`
	Time   time.Time `json:"time"`
}

// Matches reports whether an object with key, stored at stored, is purged.
func (r Record) Matches(key string, stored time.Time) bool {
	hit := key == r.Key || (r.Prefix && len(key) >= len(r.Key) && key[:len(r.Key)] == r.Key)
	return hit && stored.Before(r.Time)
}

// Op returns the op that records a purge proposed at now.
func Op(key string, prefix bool, now time.Time) (meta.Op, error) {
	if key == "" {
		return meta.Op{}, ErrBadPurge
	}
	body, err := json.Marshal(Record{Key: key, Prefix: prefix, Time: now.UTC()})
	return meta.Op{NS: NS, V: Version, Kind: OpPurge, Body: body}, err
}

// Part is the namespace's state: the latest purges, oldest first.
type Part struct {
	records []Record
}

// NewPart returns an empty part.
func NewPart() *Part { return &Part{} }

// Namespace implements meta.Part.
func (p *Part) Namespace() string { return NS }

// Version implements meta.Part.
func (p *Part) Version() int { return Version }

// Apply implements meta.Part.
func (p *Part) Apply(idx uint64, o meta.Op) *meta.Result {
	if o.Kind != OpPurge {
		return &meta.Result{Err: fmt.Errorf("%w: cache op %q", meta.ErrBadCommand, o.Kind)}
	}
	var r Record
	if err := json.Unmarshal(o.Body, &r); err != nil || r.Key == "" {
		return &meta.Result{Err: fmt.Errorf("%w: %w", meta.ErrBadCommand, ErrBadPurge)}
	}
	r.Seq = idx
	p.records = append(p.records, r)
	if over := len(p.records) - MaxRecords; over > 0 {
		p.records = append([]Record(nil), p.records[over:]...)
	}
	return &meta.Result{}
}

// Since returns the records applied after seq, oldest first.
func (p *Part) Since(seq uint64) []Record {
	for i, r := range p.records {
		if r.Seq > seq {
			return append([]Record(nil), p.records[i:]...)
		}
	}
	return nil
}

// Snapshot implements meta.Part: nil while there is no purge.
func (p *Part) Snapshot() ([]byte, error) {
	if len(p.records) == 0 {
		return nil, nil
	}
	return json.Marshal(p.records)
}

// Restore implements meta.Part.
func (p *Part) Restore(b []byte) error {
	var recs []Record
	if b != nil {
		if err := json.Unmarshal(b, &recs); err != nil {
			return fmt.Errorf("cache purges: %w", err)
		}
	}
	p.records = recs
	return nil
}
