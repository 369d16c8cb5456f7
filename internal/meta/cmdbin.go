package meta

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// A Commit entry in binary (core v7, decision 0061): JSON was about 5% of
// a one-node cluster's CPU under small writes (encoded by the leader,
// decoded by every node). An entry starting with binTag holds, after the
// tag and a format byte:
//
//	flags                  uvarint: binTake, binIfNoneMatch, binTime, binAttrs
//	path, node, blob id,
//	sha256, md5, idem      strings (uvarint length, bytes)
//	grant, if_match        uvarint
//	size                   varint
//	time                   varint seconds since 1970, uvarint nanoseconds (if binTime)
//	standby                uvarint count, strings
//	attrs                  uvarint length, JSON of Attrs (if binAttrs)
//
// Nothing may follow. JSON entries start with '{' and ops with opPrefix, so
// the three never meet. A Commit that uses other fields than these (none
// does today) is written in JSON.
const (
	binTag    byte = 0x02
	binFormat byte = 1
)

const (
	binTake = 1 << iota
	binIfNoneMatch
	binTime
	binAttrs
	binFlags = binTake | binIfNoneMatch | binTime | binAttrs
)

// EncodeBinary serialises a Commit in binary; ok is false for a command
// it does not cover (another kind, or a Commit with fields a Commit does
// not use), which Encode writes in JSON. Only for a log whose voters all
// apply core v7.
func (c Command) EncodeBinary() (b []byte, ok bool, err error) {
	if c.Kind != KindCommit || c.Force || c.Version != 0 || c.Keep != 0 || len(c.Items) != 0 ||
		c.Key != "" || c.Value != "" || c.Info != nil {
		return nil, false, nil
	}
	var flags uint64
	if c.Take {
		flags |= binTake
	}
	if c.Cond.IfNoneMatch {
		flags |= binIfNoneMatch
	}
	if !c.Time.IsZero() {
		flags |= binTime
	}
	var attrs []byte
	if c.Attrs != nil {
		flags |= binAttrs
		if attrs, err = json.Marshal(c.Attrs); err != nil {
			return nil, false, fmt.Errorf("encode commit of %s: %w", c.Path, err)
		}
	}
	n := 48 + len(c.Path) + len(c.Node) + len(c.BlobID) + len(c.Sum) + len(c.MD5) + len(c.Idem) + len(attrs)
	for _, s := range c.Standby {
		n += 1 + len(s)
	}
	b = make([]byte, 0, n)
	b = append(b, binTag, binFormat)
	b = binary.AppendUvarint(b, flags)
	for _, s := range [...]string{c.Path, c.Node, c.BlobID, c.Sum, c.MD5, c.Idem} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, c.Grant)
	b = binary.AppendUvarint(b, c.Cond.IfMatch)
	b = binary.AppendVarint(b, c.Size)
	if flags&binTime != 0 {
		b = binary.AppendVarint(b, c.Time.Unix())
		b = binary.AppendUvarint(b, uint64(c.Time.Nanosecond()))
	}
	b = binary.AppendUvarint(b, uint64(len(c.Standby)))
	for _, s := range c.Standby {
		b = appendString(b, s)
	}
	if flags&binAttrs != 0 {
		b = appendString(b, string(attrs))
	}
	return b, true, nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errBinary = errors.New("binary commit")

// decodeBinary parses an entry written by EncodeBinary.
func decodeBinary(b []byte) (Command, error) {
	c := Command{Kind: KindCommit}
	r := binReader{b: b}
	if tag, format := r.byte(), r.byte(); tag != binTag || format != binFormat {
		return Command{}, fmt.Errorf("%w: %w: format %d", ErrBadCommand, errBinary, format)
	}
	flags := r.uvarint()
	if flags&^binFlags != 0 {
		return Command{}, fmt.Errorf("%w: %w: flags %#x", ErrBadCommand, errBinary, flags)
	}
	c.Take, c.Cond.IfNoneMatch = flags&binTake != 0, flags&binIfNoneMatch != 0
	for _, s := range [...]*string{&c.Path, &c.Node, &c.BlobID, &c.Sum, &c.MD5, &c.Idem} {
		*s = r.string()
	}
	c.Grant = r.uvarint()
	c.Cond.IfMatch = r.uvarint()
	c.Size = r.varint()
	if flags&binTime != 0 {
		sec, nsec := r.varint(), r.uvarint()
		c.Time = time.Unix(sec, int64(nsec)).UTC()
		if nsec >= 1e9 || c.Time.Year() < 0 || c.Time.Year() > 9999 {
			r.fail("time out of range") // as JSON's: a state with it would not snapshot
		}
	}
	if n := r.uvarint(); n > uint64(len(r.b)) {
		r.fail("standby count")
	} else if n > 0 {
		c.Standby = make([]string, n)
		for i := range c.Standby {
			c.Standby[i] = r.string()
		}
	}
	if flags&binAttrs != 0 {
		attrs := r.string()
		if r.err == nil {
			c.Attrs = new(Attrs)
			if err := json.Unmarshal([]byte(attrs), c.Attrs); err != nil {
				r.fail("attrs: " + err.Error())
			}
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail(fmt.Sprintf("%d bytes after the command", len(r.b)))
	}
	if r.err != nil {
		return Command{}, fmt.Errorf("%w: %w: %s", ErrBadCommand, errBinary, r.err)
	}
	return c, nil
}

// binReader reads what EncodeBinary wrote; the first failure sticks and
// every later read returns zero values.
type binReader struct {
	b   []byte
	err error
}

func (r *binReader) fail(what string) {
	if r.err == nil {
		r.err = errors.New(what)
	}
	r.b = nil
}

func (r *binReader) byte() byte {
	if len(r.b) == 0 {
		r.fail("short")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *binReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *binReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *binReader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("string past the end")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
