package store

import (
	"bytes"
	"io"
	"os"
)

// Blob is an open, committed blob. It is either backed by a file (so an
// HTTP server can use sendfile via File or WriteTo) or, for small blobs,
// by an in-memory slice. Like *os.File, a Blob's Read and Seek share one
// offset and must not be used from several goroutines at once; ReadAt may
// be, except while a large blob is being checked (see below).
//
// A large blob not verified since the store opened is checked as it is
// read: read from the start to the end, the bytes are hashed as they
// pass, and the read that would return the last of them returns an error
// wrapping ErrChecksum instead if the whole does not match (CheckErr then
// reports it, and the blob is in quarantine). So a corrupt blob is never
// read whole: at worst a prefix, then the error. Any other access (a Seek
// elsewhere, ReadAt) checks the whole blob first. File is nil until the
// check has passed.
type Blob struct {
	f    File
	data []byte       // non-nil iff served from memory; shared, read-only
	r    bytes.Reader // reader over data (inline to avoid an allocation)
	size int64
	chk  *streamCheck // non-nil while the content is being checked
	bad  error        // the failed check
}

func memBlob(data []byte) *Blob {
	b := &Blob{data: data, size: int64(len(data))}
	b.r.Reset(data)
	return b
}

func (b *Blob) Read(p []byte) (int, error) {
	if b.chk != nil || b.bad != nil {
		return b.checkedRead(p)
	}
	if b.f != nil {
		return b.f.Read(p)
	}
	return b.r.Read(p)
}

func (b *Blob) Seek(off int64, whence int) (int64, error) {
	if b.f != nil {
		pos, err := b.f.Seek(off, whence)
		if err == nil && b.chk != nil {
			b.chk.pos = pos
		}
		return pos, err
	}
	return b.r.Seek(off, whence)
}

func (b *Blob) ReadAt(p []byte, off int64) (int, error) {
	if err := b.checkAll(); err != nil {
		return 0, err
	}
	if b.f != nil {
		return b.f.ReadAt(p, off)
	}
	return b.r.ReadAt(p, off)
}

// WriteTo copies the rest of the blob to w. For a verified file-backed
// blob the copy goes through io.Copy with the *os.File itself, so sockets
// get sendfile/splice.
func (b *Blob) WriteTo(w io.Writer) (int64, error) {
	if b.chk != nil || b.bad != nil {
		return io.Copy(w, struct{ io.Reader }{b}) // through Read: checked
	}
	if b.f != nil {
		return io.Copy(w, b.f)
	}
	return b.r.WriteTo(w)
}

// Close releases the file, if any. Closing a memory blob is a no-op.
func (b *Blob) Close() error {
	if b.f != nil {
		return b.f.Close()
	}
	return nil
}

// Size is the blob's length in bytes.
func (b *Blob) Size() int64 { return b.size }

// File returns the underlying file, or nil when served from memory, while
// the content is still being checked, or when the store's FS is not the
// operating system's.
func (b *Blob) File() *os.File {
	if b.chk != nil || b.bad != nil {
		return nil
	}
	f, _ := b.f.(*os.File)
	return f
}

// Bytes returns the whole content when served from memory, nil otherwise.
// The slice may be shared with the cache and must not be modified.
func (b *Blob) Bytes() []byte { return b.data }

// CheckErr returns the failed content check of this blob (wrapping
// ErrChecksum), if a read found it corrupt; nil otherwise.
func (b *Blob) CheckErr() error { return b.bad }

var (
	_ io.ReadSeekCloser = (*Blob)(nil)
	_ io.ReaderAt       = (*Blob)(nil)
	_ io.WriterTo       = (*Blob)(nil)
)
