package files

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
)

// Reader is an open version of a file, from the local replica or
// forwarded from another node. Read it, then Close it. Like *os.File, it
// must not be used from several goroutines at once.
//
// A local whole-file read exposes its content for zero-copy serving:
// Bytes (a small file cached in memory), Section (a small file in a
// segment file, for sendfile at an offset) or File (a verified file, for
// sendfile). A copy found corrupt while it is read fails the read with an
// error wrapping store.ErrChecksum, never with wrong bytes, and the
// replica is reported lost.
type Reader struct {
	info   Info // of a local read: made from f at the first Info
	s      *Service
	node   string // the node whose copy is read
	holder bool   // this node holds the file's write right

	// A local read.
	f    *meta.File
	b    *store.Blob
	sect *io.SectionReader // a range of b; nil for the whole file

	// A forwarded read: remote streams bytes [0, length) of the selected
	// range; Seek moves pos, and Read skips ahead to it (a forwarded
	// stream cannot go back).
	remote        io.ReadCloser
	length        int64
	pos, consumed int64
}

// Info describes the version being read.
func (r *Reader) Info() Info {
	if r.info.Path == "" && r.f != nil {
		r.info = infoOf(r.f) // hex digests and attributes: only when asked
	}
	return r.info
}

// Identity names the version being read: its path, its version (the raft
// index of the write that made it) and its blob ("" for a forwarded
// read). Two local reads with the same identity have the same Info, so a
// face may keep what it derives from an Info under it (never under the
// path alone).
func (r *Reader) Identity() (path string, version uint64, blob string) {
	if r.f != nil {
		return r.f.Path, r.f.Version, r.f.BlobID
	}
	return r.info.Path, r.info.Version, ""
}

// Node is the ID of the node whose copy is read.
func (r *Reader) Node() string { return r.node }

// Forwarded reports whether the content is streamed from another node.
func (r *Reader) Forwarded() bool { return r.remote != nil }

// Length is the number of bytes a read from the start of the selected
// range returns (the file's size without a range).
func (r *Reader) Length() int64 {
	switch {
	case r.remote != nil:
		return r.length
	case r.sect != nil:
		return r.sect.Size()
	}
	return r.b.Size()
}

// Bytes returns the whole content of a local read served from memory, nil
// otherwise. The slice is shared and must not be modified.
func (r *Reader) Bytes() []byte {
	if r.b == nil || r.sect != nil {
		return nil
	}
	return r.b.Bytes()
}

// File returns the open file of a verified local whole-file read (for
// sendfile), nil otherwise. It is closed by Close.
func (r *Reader) File() *os.File {
	if r.b == nil || r.sect != nil {
		return nil
	}
	return r.b.File()
}

// Section returns the segment file holding a small file's verified
// content and the content's offset in it, for sendfile at that offset
// (the file is shared: its own offset must not be used), for a local
// whole-file read; nil otherwise. The file is valid until Close.
func (r *Reader) Section() (*os.File, int64) {
	if r.b == nil || r.sect != nil {
		return nil, 0
	}
	return r.b.Section()
}

func (r *Reader) setRange(off, n int64) {
	if off == 0 && n == 0 {
		return
	}
	size := r.b.Size()
	off = min(off, size)
	if n == 0 || n > size-off {
		n = size - off
	}
	r.sect = io.NewSectionReader(r.b, off, n)
}

// Read reads the selected range. A local copy found corrupt fails with an
// error wrapping store.ErrChecksum; a forwarded stream cut short, with
// ErrInterrupted.
func (r *Reader) Read(p []byte) (int, error) {
	switch {
	case r.remote != nil:
		return r.readRemote(p)
	case r.sect != nil:
		n, err := r.sect.Read(p)
		return n, r.checked(err)
	}
	n, err := r.b.Read(p)
	return n, r.checked(err)
}

// checked reports a failed check of the local copy.
func (r *Reader) checked(err error) error {
	if err != nil && errors.Is(err, store.ErrChecksum) {
		r.s.lost(r.f, err)
	}
	return err
}

func (r *Reader) readRemote(p []byte) (int, error) {
	if skip := r.pos - r.consumed; skip > 0 {
		n, err := io.CopyN(io.Discard, r.remote, skip)
		r.consumed += n
		if err != nil {
			return 0, r.interrupted(err)
		}
	}
	if r.pos >= r.length {
		return 0, io.EOF
	}
	if rest := r.length - r.pos; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := r.remote.Read(p)
	r.pos += int64(n)
	r.consumed += int64(n)
	if err == io.EOF && r.pos < r.length {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && err != io.EOF {
		err = r.interrupted(err)
	}
	return n, err
}

func (r *Reader) interrupted(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return &UnavailableError{Kind: ErrInterrupted, Cause: err,
		Msg: fmt.Sprintf("node %s stopped sending %s mid-read (%v); retry", r.node, r.info.Path, err)}
}

// Seek sets the offset of the next Read within the selected range. A
// forwarded read can only move forward from what it has read.
func (r *Reader) Seek(offset int64, whence int) (int64, error) {
	switch {
	case r.remote == nil && r.sect != nil:
		return r.sect.Seek(offset, whence)
	case r.remote == nil:
		return r.b.Seek(offset, whence)
	}
	pos := offset
	switch whence {
	case io.SeekCurrent:
		pos += r.pos
	case io.SeekEnd:
		pos += r.length
	}
	if pos < r.consumed {
		return r.pos, fmt.Errorf("seek to %d in a forwarded read of %s that has passed %d", pos, r.info.Path, r.consumed)
	}
	r.pos = pos
	return pos, nil
}

// Holding reports whether this node holds the file's write right (ReadBy
// then counts the reader; a face may skip naming the client otherwise).
func (r *Reader) Holding() bool { return r.holder }

// ReadBy records that client read the file here, for the "reads"
// resumption policy (a no-op unless this node holds the write right).
func (r *Reader) ReadBy(client string) {
	if r.holder {
		r.s.resumer.read(r.f.Path, r.f.Grant, client)
	}
}

// Close releases the reader. It returns the failed check of a local copy
// found corrupt while it was read (the caller must then not present what
// it sent as complete).
func (r *Reader) Close() error {
	if r.remote != nil {
		return r.remote.Close()
	}
	r.b.Close()
	if err := r.b.CheckErr(); err != nil {
		r.s.lost(r.f, err)
		return err
	}
	return nil
}

// openFailed handles a local copy that could not be opened.
func (s *Service) openFailed(f *meta.File, err error) {
	switch {
	case errors.Is(err, store.ErrChecksum):
		s.lost(f, err)
	case errors.Is(err, store.ErrNotFound):
		if s.missing(f) {
			s.lost(f, err)
		}
	default:
		s.log.Error("open replica", "path", f.Path, "blob", f.BlobID, "err", err)
	}
}
