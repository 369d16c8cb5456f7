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
	buf  []byte // scratch for setKey and attrsKey
	// attrSet maps an Attrs' key (attrsKey) to its shared copy, for the
	// attributes many records carry alike (attrs); attrBytes are its
	// keys' bytes.
	attrSet   map[string]*Attrs
	attrBytes int
}

// The table of shared attributes is bounded; when it is full it starts
// afresh (records keep the copies they point at), so that values one file
// carries alone cost no more than a bounded table, and common ones are
// shared again from the next record that carries them.
const (
	maxSharedAttrs      = 4096
	maxSharedAttrsBytes = 1 << 20
)

// sharedSet is one distinct node set and the number of records in the
// tree whose Valid or Unfenced is it.
type sharedSet struct {
	ids  []string
	refs int
}

func newInterner() *interner {
	return &interner{ids: map[string]string{}, sets: map[string]*sharedSet{}, attrSet: map[string]*Attrs{}}
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
		b = appendKeyString(b, id)
	}
	return b
}

// appendKeyString appends s, length-prefixed.
func appendKeyString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// acquire returns the shared set equal to ids (same IDs in the same
// order), counting one more record using it. An empty set is nil.
func (in *interner) acquire(ids []string) []string {
	if s := in.acquireSet(ids); s != nil {
		return s.ids
	}
	return nil
}

// acquireRef is acquire for a set behind a pointer (File.Unfenced).
func (in *interner) acquireRef(ids *[]string) *[]string {
	if ids == nil {
		return nil
	}
	if s := in.acquireSet(*ids); s != nil {
		return &s.ids
	}
	return nil
}

func (in *interner) acquireSet(ids []string) *sharedSet {
	if len(ids) == 0 {
		return nil
	}
	key := in.setKey(ids)
	if s, ok := in.sets[string(key)]; ok {
		s.refs++
		return s
	}
	shared := make([]string, len(ids)) // exact size: cap == len
	for i, id := range ids {
		shared[i] = in.id(id)
	}
	s := &sharedSet{ids: shared, refs: 1}
	in.sets[string(key)] = s
	return s
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
	f.Unfenced = in.acquireRef(f.Unfenced)
	f.Holder = in.id(f.Holder)
}

// unshare counts f, leaving the tree, as a user of its sets no more.
func (in *interner) unshare(f *File) {
	in.release(f.Valid)
	in.release(f.unfenced())
}

// attrs returns the shared copy of a when it is of the kind many records
// carry alike: a content type and standard headers, without user metadata
// or a parts ETag (those are likely one file's own: its record keeps
// them). Records never write into their Attrs (Attrs), so sharing one is
// safe; a is taken, not copied.
func (in *interner) attrs(a *Attrs) *Attrs {
	if a == nil || len(a.User) > 0 || a.PartsETag != "" {
		return a
	}
	key := in.attrsKey(a)
	if shared, ok := in.attrSet[string(key)]; ok {
		return shared
	}
	if len(in.attrSet) >= maxSharedAttrs || in.attrBytes+len(key) > maxSharedAttrsBytes {
		clear(in.attrSet)
		in.attrBytes = 0
	}
	in.attrSet[string(key)] = a
	in.attrBytes += len(key)
	return a
}

// attrsKey encodes a's content type and headers (length-prefixed, headers
// by name) into the scratch buffer, valid until the next call.
func (in *interner) attrsKey(a *Attrs) []byte {
	b := appendKeyString(in.buf[:0], a.ContentType)
	for _, k := range sortedKeys(a.Headers) {
		b = appendKeyString(appendKeyString(b, k), a.Headers[k])
	}
	in.buf = b
	return b
}
