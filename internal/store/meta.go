package store

import (
	"fmt"
	"strconv"
	"strings"
)

// meta is the content of a sidecar file. The format is five text lines:
//
//	mure-blob 1
//	path "<strconv.Quote(path)>"
//	id <id>
//	size <decimal>
//	sha256 <64 lowercase hex>
//
// strconv.Quote round-trips any byte string exactly (unlike JSON, which
// replaces invalid UTF-8), so the path really is opaque to the store.
type meta struct {
	Path string
	ID   string
	Size int64
	Sum  string
}

const metaMagic = "mure-blob 1"

func (m meta) encode() []byte {
	b := make([]byte, 0, 128+len(m.Path))
	b = append(b, metaMagic+"\npath "...)
	b = strconv.AppendQuote(b, m.Path)
	b = append(b, "\nid "...)
	b = append(b, m.ID...)
	b = append(b, "\nsize "...)
	b = strconv.AppendInt(b, m.Size, 10)
	b = append(b, "\nsha256 "...)
	b = append(b, m.Sum...)
	b = append(b, '\n')
	return b
}

func decodeMeta(b []byte) (meta, error) {
	var m meta
	lines := strings.Split(string(b), "\n")
	if len(lines) != 6 || lines[5] != "" || lines[0] != metaMagic {
		return m, fmt.Errorf("malformed sidecar")
	}
	field := func(line, key string) (string, error) {
		v, ok := strings.CutPrefix(line, key+" ")
		if !ok {
			return "", fmt.Errorf("malformed sidecar: want %q", key)
		}
		return v, nil
	}
	var err error
	var v string
	if v, err = field(lines[1], "path"); err != nil {
		return m, err
	}
	if m.Path, err = strconv.Unquote(v); err != nil {
		return m, fmt.Errorf("malformed sidecar path: %w", err)
	}
	if m.ID, err = field(lines[2], "id"); err != nil {
		return m, err
	}
	if !validID(m.ID) {
		return m, fmt.Errorf("malformed sidecar id %q", m.ID)
	}
	if v, err = field(lines[3], "size"); err != nil {
		return m, err
	}
	if m.Size, err = strconv.ParseInt(v, 10, 64); err != nil || m.Size < 0 {
		return m, fmt.Errorf("malformed sidecar size %q", v)
	}
	if m.Sum, err = field(lines[4], "sha256"); err != nil {
		return m, err
	}
	if !validSum(m.Sum) {
		return m, fmt.Errorf("malformed sidecar sha256 %q", m.Sum)
	}
	return m, nil
}

// validSum reports whether s is 64 lowercase hex characters.
func validSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// readMeta reads and parses a sidecar. A missing file is returned as is
// (os.ErrNotExist); a corrupt one wraps ErrChecksum.
func (s *Store) readMeta(name string) (meta, error) {
	b, err := readFile(s.fs, name)
	if err != nil {
		return meta{}, err
	}
	m, err := decodeMeta(b)
	if err != nil {
		return m, fmt.Errorf("%s: %w: %w", name, ErrChecksum, err)
	}
	return m, nil
}
