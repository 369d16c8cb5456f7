package meta

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"time"
)

// snapReader decodes the binary snapshot format (snapcodec.go) into a new
// State. The first error sticks: later reads return zero values.
type snapReader struct {
	r    *bufio.Reader
	err  error
	s    *State
	ids  []string   // IDs by reference number
	sets [][]string // sets by reference number
	path []byte     // previous file's path
	buf  []byte     // scratch
	// version is the format's.
	version uint64
}

// readSnapshot reads a binary snapshot, magic included.
func readSnapshot(r *bufio.Reader) (*State, uint64, []section, error) {
	d := &snapReader{r: r, s: NewState()}
	if _, err := r.Discard(len(snapMagic)); err != nil {
		return nil, 0, nil, err
	}
	version := d.uvarint()
	if d.err == nil && (version < snapVersionCore || version > snapVersion) {
		return nil, 0, nil, fmt.Errorf("%w: format version %d, this binary reads %d to %d", errBadSnapshot, version, snapVersionCore, snapVersion)
	}
	d.version = version
	applied := d.uvarint()
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		d.s.restoreNode(Node{ID: d.str(), PeerAddr: d.str(), HTTPAddr: d.str(), State: NodeState(d.str()), Since: d.time()})
	}
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		k := d.str()
		d.s.config[k] = d.str()
	}
	d.s.configChanged()
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		if f := d.file(); d.err == nil {
			d.s.put(f)
		}
	}
	// After the files: a record shares its file's path string.
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		r := IdemRecord{Key: d.str(), Kind: Kind(d.str()), Path: d.str(), Version: d.uvarint()}
		if d.err == nil {
			d.s.rememberIdem(r)
		}
	}
	var sections []section
	if version >= snapVersionSections {
		for n := d.uvarint(); n > 0 && d.err == nil; n-- {
			sec := section{NS: d.str(), Version: int(d.uvarint())}
			sec.Data = slices.Clone(d.bytesMax(snapMaxSection))
			if sec.Data == nil {
				sec.Data = []byte{}
			}
			sections = append(sections, sec)
		}
	}
	d.end()
	if d.err != nil {
		return nil, 0, nil, d.err
	}
	return d.s, applied, sections, nil
}

func (d *snapReader) fail(err error) {
	if d.err == nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		d.err = err
	}
}

func (d *snapReader) file() *File {
	shared := d.uvarint()
	if shared > uint64(len(d.path)) {
		d.fail(fmt.Errorf("%w: path shares %d bytes with a %d-byte one", errBadSnapshot, shared, len(d.path)))
		return nil
	}
	d.path = append(d.path[:shared], d.bytes()...)
	f := &File{Path: string(d.path), Version: d.uvarint()}
	flags := d.byte()
	if flags&^flagsKnown != 0 || flags&flagsV4 != 0 && d.version < snapVersion {
		d.fail(fmt.Errorf("%w: file flags %#x in a version %d snapshot", errBadSnapshot, flags, d.version))
		return nil
	}
	f.Deleted, f.Pending = flags&flagDeleted != 0, flags&flagPending != 0
	f.BlobID = d.str()
	f.Size = d.varint()
	if flags&flagHexSum != 0 {
		d.full(f.Sum[:])
	} else {
		f.Sum, _ = ParseSHA256(string(d.bytes())) // not hex: no sum (snapcodec.go)
	}
	f.Modified = StampOf(d.time())
	f.Holder = d.id()
	f.Grant = d.uvarint()
	f.Unfenced = nodesRef(d.set())
	f.Valid = d.set()
	switch {
	case flags&flagHexMD5 != 0:
		d.full(f.MD5[:])
	case flags&flagMD5 != 0:
		f.MD5, _ = ParseMD5(string(d.bytes())) // not hex: none (snapcodec.go)
	}
	if flags&flagAttrs != 0 {
		a := &Attrs{ContentType: d.str(), PartsETag: d.str(), Headers: d.strMap(), User: d.strMap()}
		f.Attrs = d.s.in.attrs(a.orNil())
	}
	return f
}

// strMap reads a map written by snapWriter.strMap (nil when empty).
func (d *snapReader) strMap() map[string]string {
	var m map[string]string
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		if m == nil {
			m = map[string]string{}
		}
		k := d.str()
		m[k] = d.str()
	}
	return m
}

func (d *snapReader) byte() byte {
	if d.err != nil {
		return 0
	}
	b, err := d.r.ReadByte()
	d.fail(err)
	return b
}

func (d *snapReader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.r)
	d.fail(err)
	return v
}

func (d *snapReader) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(d.r)
	d.fail(err)
	return v
}

func (d *snapReader) full(b []byte) {
	if d.err != nil {
		return
	}
	_, err := io.ReadFull(d.r, b)
	d.fail(err)
}

// bytes reads a string into the scratch buffer, valid until the next call.
func (d *snapReader) bytes() []byte { return d.bytesMax(snapMaxString) }

// bytesMax reads a string of up to max bytes into the scratch buffer.
func (d *snapReader) bytesMax(limit uint64) []byte {
	n := d.uvarint()
	if n > limit {
		d.fail(fmt.Errorf("%w: a %d-byte string", errBadSnapshot, n))
	}
	if d.err != nil {
		return nil
	}
	// Grow with the data actually read, so that a corrupt length costs no
	// more memory than the snapshot's size.
	d.buf = d.buf[:0]
	for n > 0 && d.err == nil {
		chunk := min(n, 64<<10)
		d.buf = slices.Grow(d.buf, int(chunk))
		d.full(d.buf[len(d.buf) : len(d.buf)+int(chunk)])
		d.buf = d.buf[:len(d.buf)+int(chunk)]
		n -= chunk
	}
	return d.buf
}

func (d *snapReader) str() string { return string(d.bytes()) }

func (d *snapReader) time() time.Time {
	sec, nsec := d.varint(), d.uvarint()
	if nsec >= uint64(time.Second) {
		d.fail(fmt.Errorf("%w: %d nanoseconds", errBadSnapshot, nsec))
	}
	if d.err != nil {
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

func (d *snapReader) id() string {
	switch ref := d.uvarint(); {
	case d.err != nil, ref == 0:
		return ""
	case ref == 1:
		id := d.s.in.id(d.str())
		d.ids = append(d.ids, id)
		return id
	case ref-2 < uint64(len(d.ids)):
		return d.ids[ref-2]
	default:
		d.fail(fmt.Errorf("%w: node ID #%d of %d", errBadSnapshot, ref-2, len(d.ids)))
		return ""
	}
}

func (d *snapReader) set() []string {
	switch ref := d.uvarint(); {
	case d.err != nil, ref == 0:
		return nil
	case ref == 1:
		var ids []string
		for n := d.uvarint(); n > 0 && d.err == nil; n-- {
			ids = append(ids, d.id())
		}
		d.sets = append(d.sets, ids)
		return ids
	case ref-2 < uint64(len(d.sets)):
		return d.sets[ref-2]
	default:
		d.fail(fmt.Errorf("%w: node set #%d of %d", errBadSnapshot, ref-2, len(d.sets)))
		return nil
	}
}

// end checks the end marker and that nothing follows it.
func (d *snapReader) end() {
	var mark [len(snapEnd)]byte
	d.full(mark[:])
	if d.err == nil && string(mark[:]) != snapEnd {
		d.fail(fmt.Errorf("%w: no end marker", errBadSnapshot))
	}
	if d.err == nil {
		if _, err := d.r.ReadByte(); err != io.EOF {
			d.fail(fmt.Errorf("%w: data after the end marker", errBadSnapshot))
		}
	}
}
