package meta

import "hash/maphash"

// IdemRecord remembers what one idempotent write (commit or delete)
// produced, so that a retry of it — through another node, after the first
// answer was lost — is recognised and not applied twice, even if other
// writes came in between.
type IdemRecord struct {
	Key     string `json:"key"`
	Kind    Kind   `json:"kind"`
	Path    string `json:"path"`
	Version uint64 `json:"version"`
}

// MaxIdem bounds the idempotency records kept: the most recent ones, over
// every file. A retry older than that many writes is applied as new.
const MaxIdem = 1 << 16

// retryOf reports whether c repeats the write that used its key.
func (s *State) retryOf(c Command) bool {
	r, ok := s.Idem(c.Idem)
	return ok && r.Path == c.Path && r.Kind == c.Kind
}

// Idem returns the record of an idempotency key, if still remembered.
func (s *State) Idem(key string) (IdemRecord, bool) {
	if key == "" {
		return IdemRecord{}, false
	}
	if _, slot := s.idem.find(key); slot >= 0 {
		e := &s.idem.ring[slot]
		return IdemRecord{Key: e.key, Kind: e.kind, Path: e.path, Version: e.version}, true
	}
	return IdemRecord{}, false
}

// rememberIdem records r, forgetting the oldest record beyond MaxIdem. A
// key already remembered keeps its place in the order.
func (s *State) rememberIdem(r IdemRecord) {
	if r.Key == "" {
		return
	}
	if f := s.File(r.Path); f != nil {
		r.Path = f.Path // share the record's string
	}
	s.idem.remember(idemEntry{key: r.Key, path: r.Path, kind: canonicalKind(r.Kind), version: r.Version})
}

// canonicalKind returns the constant's string for a known kind, so that a
// record does not keep the decoded command's copy alive.
func canonicalKind(k Kind) Kind {
	switch k {
	case KindCommit:
		return KindCommit
	case KindDelete:
		return KindDelete
	}
	return k
}

// idemRecords returns the records oldest first (for snapshots).
func (s *State) idemRecords() []IdemRecord {
	t := &s.idem
	out := make([]IdemRecord, 0, len(t.ring))
	for i := range t.ring {
		e := &t.ring[(t.head+i)%len(t.ring)]
		out = append(out, IdemRecord{Key: e.key, Kind: e.kind, Path: e.path, Version: e.version})
	}
	return out
}

// idemTable holds the most recent MaxIdem records: a ring, oldest first
// from head, and an open-addressing index of the ring by key. Its memory
// is fixed once full: about 4 MB besides the keys, where a Go map,
// churned by as many deletes as inserts, took about 9 MB.
type idemTable struct {
	ring  []idemEntry
	head  int
	index []int32 // ring slot + 1 (0: empty), linear probing
	seed  maphash.Seed
}

type idemEntry struct {
	key, path string
	kind      Kind
	version   uint64
}

// idemIndexSize keeps the index at most half full, for short probes.
const idemIndexSize = 2 * MaxIdem

func (t *idemTable) home(key string) int {
	return int(maphash.String(t.seed, key) & (idemIndexSize - 1))
}

// find returns the index position of key and its ring slot, or the empty
// position where it would go and -1.
func (t *idemTable) find(key string) (pos, slot int) {
	if t.index == nil {
		return -1, -1
	}
	for pos = t.home(key); ; pos = (pos + 1) & (idemIndexSize - 1) {
		s := int(t.index[pos]) - 1
		if s < 0 || t.ring[s].key == key {
			return pos, s
		}
	}
}

func (t *idemTable) remember(e idemEntry) {
	if t.index == nil {
		t.index = make([]int32, idemIndexSize)
		t.seed = maphash.MakeSeed()
	}
	pos, slot := t.find(e.key)
	if slot >= 0 {
		t.ring[slot] = e
		return
	}
	if len(t.ring) < MaxIdem {
		t.ring = append(t.ring, e)
		if len(t.ring) == MaxIdem {
			t.ring = append(make([]idemEntry, 0, MaxIdem), t.ring...) // drop append's slack
		}
		t.index[pos] = int32(len(t.ring))
		return
	}
	oldest, _ := t.find(t.ring[t.head].key)
	t.unindex(oldest)
	t.ring[t.head] = e
	pos, _ = t.find(e.key) // the removal may have moved entries
	t.index[pos] = int32(t.head + 1)
	t.head = (t.head + 1) % MaxIdem
}

// unindex empties an index position, moving back the entries after it
// that could not sit in their home position (backward-shift deletion), so
// that every entry stays reachable from its home without tombstones.
func (t *idemTable) unindex(pos int) {
	const mask = idemIndexSize - 1
	for next := (pos + 1) & mask; t.index[next] != 0; next = (next + 1) & mask {
		home := t.home(t.ring[t.index[next]-1].key)
		// The entry at next may move to pos unless its home lies
		// cyclically in (pos, next].
		if (next-home)&mask >= (next-pos)&mask {
			t.index[pos] = t.index[next]
			pos = next
		}
	}
	t.index[pos] = 0
}
