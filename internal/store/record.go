package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// A segment is a sequence of records (decision 0037):
//
//	off size
//	  0   4  CRC-32C (Castagnoli) of bytes 4..68 of the header, the path and the id
//	  4   1  kind: 1 a blob, 2 a removal (tombstone)
//	  5   1  length of the id
//	  6   2  zero
//	  8   4  length of the path
//	 12   4  size of the content (0 for a removal)
//	 16   4  CRC-32C of the content
//	 20   8  commit time, Unix nanoseconds
//	 28   8  a removal: the segment it removes from (a blob: 0)
//	 36  32  the content's SHA-256 (a removal: zero)
//	 68      the path, the id, then the content
//
// All integers are little-endian. The header's CRC covers the content's
// CRC, so a record whose header checks has a trustworthy length and a
// content that can be checked on its own.
const (
	recHeader = 68

	recBlob    = 1
	recRemoval = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errBadRecord marks a record that does not check: a torn or unsynced
// tail, or corruption. errBadData marks one whose header checks but whose
// content does not: corruption of a blob (what follows can be trusted).
var (
	errBadRecord = errors.New("bad record")
	errBadData   = errors.New("content checksum mismatch")
)

// record is one decoded record.
type record struct {
	kind     byte
	path, id string
	size     int64
	dataCRC  uint32
	mtime    int64
	ref      uint64   // a removal: the segment removed from
	sum      [32]byte // a blob: the content's SHA-256
}

// length is the record's total size on disk.
func (r *record) length() int64 { return recHeader + int64(len(r.path)+len(r.id)) + r.size }

// appendRecord encodes r followed by data (r.size bytes) onto b.
func appendRecord(b []byte, r *record, data []byte) []byte {
	start := len(b)
	var h [recHeader]byte
	h[4] = r.kind
	h[5] = byte(len(r.id))
	binary.LittleEndian.PutUint32(h[8:], uint32(len(r.path)))
	binary.LittleEndian.PutUint32(h[12:], uint32(len(data)))
	binary.LittleEndian.PutUint32(h[16:], crc32.Checksum(data, castagnoli))
	binary.LittleEndian.PutUint64(h[20:], uint64(r.mtime))
	binary.LittleEndian.PutUint64(h[28:], r.ref)
	copy(h[36:], r.sum[:])
	b = append(b, h[:]...)
	b = append(b, r.path...)
	b = append(b, r.id...)
	crc := crc32.Checksum(b[start+4:], castagnoli)
	binary.LittleEndian.PutUint32(b[start:], crc)
	return append(b, data...)
}

// decodeHeader decodes the fixed header in h (recHeader bytes) and
// returns the record, still without path and id, and the length of the
// path and id that follow.
func decodeHeader(h []byte) (r record, pathLen, idLen int, err error) {
	r.kind = h[4]
	idLen = int(h[5])
	pathLen64 := binary.LittleEndian.Uint32(h[8:])
	r.size = int64(binary.LittleEndian.Uint32(h[12:]))
	r.dataCRC = binary.LittleEndian.Uint32(h[16:])
	r.mtime = int64(binary.LittleEndian.Uint64(h[20:]))
	r.ref = binary.LittleEndian.Uint64(h[28:])
	copy(r.sum[:], h[36:recHeader])
	switch {
	case r.kind != recBlob && r.kind != recRemoval, h[6] != 0 || h[7] != 0:
		return r, 0, 0, fmt.Errorf("%w: kind %d", errBadRecord, r.kind)
	case idLen == 0 || idLen > maxIDLen, pathLen64 > maxRecPath, r.size > segmentMax:
		return r, 0, 0, fmt.Errorf("%w: lengths %d, %d", errBadRecord, pathLen64, idLen)
	case r.kind == recRemoval && r.size != 0:
		return r, 0, 0, fmt.Errorf("%w: a removal with content", errBadRecord)
	}
	return r, int(pathLen64), idLen, nil
}

// maxRecPath bounds a path in a record, so that a corrupt length cannot
// make a scan allocate without bound (paths are at most 1 KiB in
// practice).
const maxRecPath = 1 << 20

// checkNames checks the header's CRC over h (the header) and names (the
// path then the id) and fills r's path and id.
func checkNames(r *record, h, names []byte, idLen int) error {
	crc := crc32.Update(crc32.Checksum(h[4:recHeader], castagnoli), castagnoli, names)
	if crc != binary.LittleEndian.Uint32(h[:4]) {
		return fmt.Errorf("%w: header checksum", errBadRecord)
	}
	r.path = string(names[:len(names)-idLen])
	r.id = string(names[len(names)-idLen:])
	if !validID(r.id) {
		return fmt.Errorf("%w: id %q", errBadRecord, r.id)
	}
	return nil
}

// checkData checks content against the record's CRC.
func (r *record) checkData(data []byte) error {
	if int64(len(data)) != r.size || crc32.Checksum(data, castagnoli) != r.dataCRC {
		return errBadData
	}
	return nil
}

// decodeRecord decodes a whole record (header, names, content) from b,
// checking both CRCs (a content that does not check is errBadData, with
// the record decoded). The content aliases b.
func decodeRecord(b []byte) (record, []byte, error) {
	if len(b) < recHeader {
		return record{}, nil, fmt.Errorf("%w: short", errBadRecord)
	}
	r, pathLen, idLen, err := decodeHeader(b[:recHeader])
	if err != nil {
		return r, nil, err
	}
	end := recHeader + pathLen + idLen
	if int64(len(b)) != int64(end)+r.size {
		return r, nil, fmt.Errorf("%w: length", errBadRecord)
	}
	if err := checkNames(&r, b[:recHeader], b[recHeader:end], idLen); err != nil {
		return r, nil, err
	}
	data := b[end:]
	return r, data, r.checkData(data)
}
