package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"
	"time"
)

// Info describes a committed blob.
type Info struct {
	Path, ID string
	Size     int64
	Sum      string // lowercase hex SHA-256 of the content
	ModTime  time.Time
}

const writeBufSize = 128 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, writeBufSize); return &b }}

// Writer stages a new blob in dir/tmp, hashing it as it is written. Finish
// with Commit, CommitVerify or Abort (deferring Abort is fine: it is a
// no-op after a Commit). A Writer must not be used from several goroutines
// at once. Write errors are sticky: the temp file is deleted immediately and
// every later call returns the same error.
type Writer struct {
	s        *Store
	path, id string
	name     string // temp file name; "" before it exists, once removed or renamed
	f        File   // nil before the first flush and once closed
	closed   bool   // committed, aborted or failed
	h        hash.Hash
	n        int64
	pbuf     *[]byte // pooled buffer; buf aliases *pbuf
	buf      []byte
	err      error // sticky
	info     Info  // set by a successful commit
	done     bool  // committed
}

// Create stages a new blob (path, id). Nothing is visible to readers until
// Commit succeeds. The temp file is created once the content outgrows the
// Writer's buffer: a small blob (Options.SmallMax) never has one.
func (s *Store) Create(path, id string) (*Writer, error) {
	if !validID(id) {
		return nil, fmt.Errorf("store: create %q/%q: %w", path, id, ErrBadID)
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("store: create %q/%s: %w", path, id, ErrClosed)
	}
	w := &Writer{s: s, path: path, id: id, h: sha256.New()}
	w.pbuf = bufPool.Get().(*[]byte)
	w.buf = (*w.pbuf)[:0]
	return w, nil
}

func (w *Writer) usable() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errWriterDone
	}
	return nil
}

// file returns the temp file, creating it at the first need.
func (w *Writer) file() (File, error) {
	if w.f == nil {
		f, err := w.s.createTemp(w.s.locate(w.path), "blob-*")
		if err != nil {
			return nil, w.fail("create", err)
		}
		w.f, w.name = f, f.Name()
	}
	return w.f, nil
}

// Write implements io.Writer. Data is buffered; large writes go straight
// to the file.
func (w *Writer) Write(p []byte) (int, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	if len(w.buf)+len(p) > cap(w.buf) {
		if err := w.flush(); err != nil {
			return 0, err
		}
		if len(p) >= cap(w.buf) {
			f, err := w.file()
			if err != nil {
				return 0, err
			}
			if _, err := f.Write(p); err != nil {
				return 0, w.fail("write", err)
			}
			w.h.Write(p)
			w.n += int64(len(p))
			return len(p), nil
		}
	}
	w.buf = append(w.buf, p...)
	w.h.Write(p)
	w.n += int64(len(p))
	return len(p), nil
}

// ReadFrom implements io.ReaderFrom (used by io.Copy): it reads straight
// into the writer's buffer, with no intermediate copy. An error from r is
// returned as is and does not poison the Writer.
func (w *Writer) ReadFrom(r io.Reader) (int64, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	var total int64
	for {
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(); err != nil {
				return total, err
			}
		}
		start := len(w.buf)
		m, err := r.Read(w.buf[start:cap(w.buf)])
		if m > 0 {
			w.buf = w.buf[:start+m]
			w.h.Write(w.buf[start:])
			w.n += int64(m)
			total += int64(m)
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (w *Writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	f, err := w.file()
	if err != nil {
		return err
	}
	if _, err := f.Write(w.buf); err != nil {
		return w.fail("write", err)
	}
	w.buf = w.buf[:0]
	return nil
}

// fail records a sticky error and deletes the temp file, so that a full
// disk is relieved at once.
func (w *Writer) fail(op string, err error) error {
	w.err = wrapErr(op, w.path, w.id, err)
	w.discard()
	return w.err
}

// discard closes and deletes the temp file and returns the buffer.
func (w *Writer) discard() {
	w.closed = true
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	if w.name != "" {
		w.s.fs.Remove(w.name)
		w.name = ""
	}
	w.release()
}

func (w *Writer) release() {
	if w.pbuf != nil {
		*w.pbuf = w.buf[:0]
		bufPool.Put(w.pbuf)
		w.pbuf, w.buf = nil, nil
	}
}

// Abort discards the staged blob. It is a no-op after a successful Commit
// and safe to call more than once.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.discard()
	if w.err == nil {
		w.err = errWriterDone
	}
}

// Commit makes the blob durable and visible: fsync the temp file, write
// the sidecar, rename both into place and fsync the directory (see doc.go
// for the exact order). If (path, id) already holds the same content the
// commit succeeds (and atomically replaces the data file, which heals a
// corrupted copy); different content replaces the old blob. Calling Commit
// again after success returns the same Info.
func (w *Writer) Commit() (Info, error) { return w.commit(false, "", 0) }

// CommitVerify is Commit, but fails with an error wrapping ErrChecksum,
// leaving no blob, unless the content's SHA-256 (hex, any case) is wantSum
// and its size is wantSize.
func (w *Writer) CommitVerify(wantSum string, wantSize int64) (Info, error) {
	return w.commit(true, wantSum, wantSize)
}

func (w *Writer) commit(verify bool, wantSum string, wantSize int64) (Info, error) {
	if w.done {
		return w.info, nil
	}
	if err := w.usable(); err != nil {
		return Info{}, err
	}
	end, err := w.s.begin()
	if err != nil {
		return Info{}, w.fail("commit", err)
	}
	defer end()
	if w.f == nil && w.s.smallMax >= 0 && w.n <= w.s.smallMax {
		return w.commitToSegment(verify, wantSum, wantSize)
	}
	if err := w.flush(); err != nil {
		return Info{}, err
	}
	if _, err := w.file(); err != nil { // an empty blob with SmallMax < 0
		return Info{}, err
	}
	if w.s.sync {
		if err := w.f.Sync(); err != nil {
			return Info{}, w.fail("commit", err)
		}
	}
	fi, err := w.f.Stat()
	if err != nil {
		return Info{}, w.fail("commit", err)
	}
	err = w.f.Close()
	w.f, w.closed = nil, true
	w.release()
	if err != nil {
		return Info{}, w.fail("commit", err)
	}
	info := Info{
		Path:    w.path,
		ID:      w.id,
		Size:    w.n,
		Sum:     hex.EncodeToString(w.h.Sum(nil)),
		ModTime: fi.ModTime(),
	}
	if fi.Size() != w.n { // cannot happen unless someone meddles with tmp
		return Info{}, w.fail("commit", fmt.Errorf("%w: temp file has %d bytes, wrote %d", ErrChecksum, fi.Size(), w.n))
	}
	if err := w.checkWant(verify, wantSum, wantSize, info); err != nil {
		return Info{}, err
	}
	name := w.name
	w.name = "" // install owns it now (and removes it on failure)
	if err := w.s.install(name, info); err != nil {
		return Info{}, w.fail("commit", err)
	}
	w.done, w.info = true, info
	return info, nil
}

// checkWant fails the Writer, leaving no blob, when CommitVerify's
// expectation is not met.
func (w *Writer) checkWant(verify bool, wantSum string, wantSize int64, info Info) error {
	if verify && (!strings.EqualFold(wantSum, info.Sum) || wantSize != info.Size) {
		w.discard()
		w.err = fmt.Errorf("store: commit %q/%s: %w: want sha256 %s size %d, got sha256 %s size %d",
			w.path, w.id, ErrChecksum, strings.ToLower(wantSum), wantSize, info.Sum, info.Size)
		return w.err
	}
	return nil
}

// commitToSegment commits a blob still whole in the buffer to the
// current segment (small.go).
func (w *Writer) commitToSegment(verify bool, wantSum string, wantSize int64) (Info, error) {
	info := Info{Path: w.path, ID: w.id, Size: w.n, Sum: hex.EncodeToString(w.h.Sum(nil)), ModTime: time.Now()}
	if err := w.checkWant(verify, wantSum, wantSize, info); err != nil {
		return Info{}, err
	}
	w.closed = true
	if err := w.commitSmall(info); err != nil {
		w.release()
		w.err = wrapErr("commit", w.path, w.id, err)
		return Info{}, w.err
	}
	w.done, w.info = true, info
	return info, nil
}
