package raftstore

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// errCorrupt is returned for an entry that cannot be decoded: an
// ErrCorrupt, like every other record this package never writes.
var errCorrupt = fmt.Errorf("log entry: %w", ErrCorrupt)

// entrySize is the length of l's encoding.
func entrySize(l *raft.Log) int { return 33 + len(l.Data) + len(l.Extensions) }

// appendEntry appends l's encoding to b: index, term (8 bytes each), type
// (1), appended-at in Unix nanoseconds (8), then data and extensions, each
// preceded by its length (4).
func appendEntry(b []byte, l *raft.Log) []byte {
	b = binary.BigEndian.AppendUint64(b, l.Index)
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Extensions)))
	return append(b, l.Extensions...)
}

func decode(b []byte, l *raft.Log) error {
	if len(b) < 29 {
		return errCorrupt
	}
	l.Index = binary.BigEndian.Uint64(b)
	l.Term = binary.BigEndian.Uint64(b[8:])
	l.Type = raft.LogType(b[16])
	if at := int64(binary.BigEndian.Uint64(b[17:])); at != 0 {
		l.AppendedAt = time.Unix(0, at)
	} else {
		l.AppendedAt = time.Time{}
	}
	rest := b[25:]
	var ok bool
	if l.Data, rest, ok = chunk(rest); !ok {
		return errCorrupt
	}
	if l.Extensions, _, ok = chunk(rest); !ok {
		return errCorrupt
	}
	return nil
}

// chunk reads a length-prefixed byte string. It is not copied: decode's
// callers hand it a buffer of its own (GetLog reads each entry into a new
// one); the capacity is cut so that appending to it cannot reach rest.
func chunk(b []byte) (data, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(n) > uint64(len(b)) {
		return nil, nil, false
	}
	if n == 0 {
		return nil, b, true
	}
	return b[:n:n], b[n:], true
}
