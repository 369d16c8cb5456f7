package meta

import (
	"encoding/binary"
	"strings"
)

// interner shares node IDs and node sets between the records of a State.
// A catalogue holds millions of records but names only a few nodes, and
// only a few distinct sets of them: decoding a command allocates fresh
// copies of every ID it names, so without sharing each record would own
// its own valid set and the strings in it.
//
// A shared set's slice has cap == len, so appending to it always copies;
// records are immutable once published (File), so nothing writes into it
// in place (clone copies the sets of a record about to be modified).
type interner struct {
	// ids maps a node ID to its one shared string. It only grows, with
	// the node IDs ever named by a record: a cluster has few.
	ids map[string]string
	// sets maps a set's key (setKey) to the set, while records in the
	// tree use it.
	sets map[string]*sharedSet
	buf  []byte // scratch for setKey
}

// sharedSet is one distinct node set and the number of records in the
// tree whose Valid or Unfenced is it.
type sharedSet struct {
	ids  []string
	refs int
}

func newInterner() *interner {
	return &interner{ids: map[string]string{}, sets: map[string]*sharedSet{}}
}

// id returns the shared copy of a node ID.
func (in *interner) id(id string) string {
	if id == "" {
		return ""
	}
	if s, ok := in.ids[id]; ok {
		return s
	}
	id = strings.Clone(id) // not part of a larger string kept alive
	in.ids[id] = id
	return id
}

// setKey encodes ids into the scratch buffer; the result is only valid
// until the next call.
func (in *interner) setKey(ids []string) []byte {
	in.buf = appendSetKey(in.buf[:0], ids)
	return in.buf
}

// appendSetKey appends an unambiguous (length-prefixed) encoding of ids.
func appendSetKey(b []byte, ids []string) []byte {
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
	}
	return b
}

// acquire returns the shared set equal to ids (same IDs in the same
// order), counting one more record using it. An empty set is nil.
func (in *interner) acquire(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	key := in.setKey(ids)
	if s, ok := in.sets[string(key)]; ok {
		s.refs++
		return s.ids
	}
	shared := make([]string, len(ids)) // exact size: cap == len
	for i, id := range ids {
		shared[i] = in.id(id)
	}
	in.sets[string(key)] = &sharedSet{ids: shared, refs: 1}
	return shared
}

// release counts one record fewer using the set; the last one forgets it.
func (in *interner) release(ids []string) {
	if len(ids) == 0 {
		return
	}
	key := in.setKey(ids)
	s, ok := in.sets[string(key)]
	if !ok {
		return
	}
	if s.refs--; s.refs <= 0 {
		delete(in.sets, string(key))
	}
}

// share makes f point at shared IDs and sets, counting it as a user of
// its sets (f is about to enter the tree).
func (in *interner) share(f *File) {
	f.Valid = in.acquire(f.Valid)
	f.Unfenced = in.acquire(f.Unfenced)
	f.Holder = in.id(f.Holder)
}

// unshare counts f, leaving the tree, as a user of its sets no more.
func (in *interner) unshare(f *File) {
	in.release(f.Valid)
	in.release(f.Unfenced)
}
