package raftstore

import (
	"encoding/binary"
	"hash/crc32"
)

// A segment file starts with segMagic and its sequence number (8 bytes),
// then holds records: length (4 bytes) and CRC-32C of the payload (4),
// then the payload, whose first byte is its kind. A record cut short or
// whose checksum fails ends the segment: it was written after the last
// sync, so nobody was told it was stored.
const (
	segMagic  = "MURELOG1"
	segHeader = len(segMagic) + 8
	recHeader = 8
	// maxRecord bounds a record's length as read back (a torn length
	// field must not make replay allocate gigabytes).
	maxRecord = 1 << 30
)

// Record kinds.
const (
	kindEntry  byte = 1 // a raft log entry (codec.go)
	kindDelete byte = 2 // DeleteRange(min, max)
	kindSet    byte = 3 // a stable-store key and value
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends one framed record of kind k with body to b.
func appendRecord(b []byte, k byte, body []byte) []byte {
	b, start := beginRecord(b, k)
	return endRecord(append(b, body...), start)
}

// beginRecord appends the header of a record of kind k, whose body the
// caller then appends to b itself; endRecord(b, start) frames it.
func beginRecord(b []byte, k byte) (_ []byte, start int) {
	start = len(b)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0, k) // length and checksum: endRecord
	return b, start
}

// endRecord fills in the length and checksum of the record begun at
// start, whose payload runs to the end of b.
func endRecord(b []byte, start int) []byte {
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-recHeader))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(b[start+recHeader:], castagnoli))
	return b
}

func deleteBody(min, max uint64) []byte {
	b := binary.BigEndian.AppendUint64(nil, min)
	return binary.BigEndian.AppendUint64(b, max)
}

func setBody(k, v []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(k)))
	b = append(b, k...)
	return append(b, v...)
}

func parseSet(b []byte) (k, v []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}
