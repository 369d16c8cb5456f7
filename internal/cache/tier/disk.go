package tier

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// magic opens every object file (format version 1).
var magic = []byte("MURECO1\n")

// maxMeta bounds an object file's header (a response header is limited
// well below this by the proxy).
const maxMeta = 4 << 20

// disk is the directory of object files: DIR/objects/ab/ID, temporaries
// in DIR/tmp. A file is magic, the meta's length (uint32, big-endian),
// the meta as JSON, the body, and the SHA-256 of all that precedes it.
type disk struct {
	dir    string
	noSync bool
}

func (d *disk) path(id string) string { return filepath.Join(d.dir, "objects", id[:2], id) }

// write stores an object crash-safely: a temporary file written and
// fsynced, renamed into place, the directory fsynced. It returns the
// file's size.
func (d *disk) write(o *Object) (int64, error) {
	meta, err := json.Marshal(&o.Meta)
	if err != nil {
		return 0, err
	}
	final := d.path(o.ID())
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Join(d.dir, "tmp"), "obj-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	h := sha256.New()
	w := io.MultiWriter(tmp, h)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(meta)))
	for _, b := range [][]byte{magic, n[:], meta, o.Body} {
		if _, err := w.Write(b); err != nil {
			tmp.Close()
			return 0, err
		}
	}
	if _, err := tmp.Write(h.Sum(nil)); err != nil {
		tmp.Close()
		return 0, err
	}
	if !d.noSync {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return 0, err
		}
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return 0, err
	}
	size := int64(len(magic) + 4 + len(meta) + len(o.Body) + sha256.Size)
	return size, d.syncDir(filepath.Dir(final))
}

func (d *disk) syncDir(dir string) error {
	if d.noSync {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// read returns the object whole, its checksum checked, and the file's
// size; a file that fails is removed and ErrCorrupt returned.
func (d *disk) read(id string) (*Object, int64, error) {
	b, err := os.ReadFile(d.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, ErrNotFound
	}
	if err != nil {
		return nil, 0, err
	}
	o, err := decode(b, true)
	if err != nil {
		d.remove(id)
		return nil, 0, fmt.Errorf("%s: %w", id, err)
	}
	return o, int64(len(b)), nil
}

// decode parses an object file; with verify, the checksum is checked and
// the body returned, else only the meta (a start-up scan).
func decode(b []byte, verify bool) (*Object, error) {
	if len(b) < len(magic)+4+sha256.Size || !bytes.Equal(b[:len(magic)], magic) {
		return nil, ErrCorrupt
	}
	n := int(binary.BigEndian.Uint32(b[len(magic):]))
	start := len(magic) + 4
	if n > maxMeta || start+n+sha256.Size > len(b) {
		return nil, ErrCorrupt
	}
	o := &Object{}
	if err := json.Unmarshal(b[start:start+n], &o.Meta); err != nil {
		return nil, ErrCorrupt
	}
	body := b[start+n : len(b)-sha256.Size]
	if int64(len(body)) != o.Size {
		return nil, ErrCorrupt
	}
	if verify {
		sum := sha256.Sum256(b[:len(b)-sha256.Size])
		if !bytes.Equal(sum[:], b[len(b)-sha256.Size:]) {
			return nil, ErrCorrupt
		}
		o.Body = body
	}
	return o, nil
}

// readMeta reads an object file's meta (no checksum: the body is checked
// when it is read) and the file's size.
func (d *disk) readMeta(path string) (*Meta, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	head := make([]byte, len(magic)+4)
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head[:len(magic)], magic) {
		return nil, 0, ErrCorrupt
	}
	n := int64(binary.BigEndian.Uint32(head[len(magic):]))
	if n > maxMeta || int64(len(head))+n+sha256.Size > st.Size() {
		return nil, 0, ErrCorrupt
	}
	meta := make([]byte, n)
	if _, err := io.ReadFull(f, meta); err != nil {
		return nil, 0, ErrCorrupt
	}
	var m Meta
	if err := json.Unmarshal(meta, &m); err != nil {
		return nil, 0, ErrCorrupt
	}
	if int64(len(head))+n+m.Size+sha256.Size != st.Size() {
		return nil, 0, ErrCorrupt
	}
	return &m, st.Size(), nil
}

func (d *disk) remove(id string) { os.Remove(d.path(id)) }

// scan prepares the directory and calls found for every well-formed
// object file; temporaries and malformed files are removed.
func (d *disk) scan(found func(m *Meta, size int64)) error {
	if err := os.RemoveAll(filepath.Join(d.dir, "tmp")); err != nil {
		return err
	}
	for _, sub := range []string{"tmp", "objects"} {
		if err := os.MkdirAll(filepath.Join(d.dir, sub), 0o755); err != nil {
			return err
		}
	}
	return filepath.WalkDir(filepath.Join(d.dir, "objects"), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		m, size, err := d.readMeta(path)
		if err != nil || m.ID() != filepath.Base(path) || strings.Contains(e.Name(), ".") {
			os.Remove(path)
			return nil
		}
		found(m, size)
		return nil
	})
}
