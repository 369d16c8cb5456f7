package store

import (
	"bytes"
	"io"
	"os"
)

// Blob is an open, committed blob. It is either backed by an *os.File (so an
// HTTP server can use sendfile via File or WriteTo) or, for small cached
// blobs, by an in-memory slice. Like *os.File, a Blob's Read and Seek share
// one offset and must not be used from several goroutines at once; ReadAt
// may be.
type Blob struct {
	f    *os.File
	data []byte       // non-nil iff served from memory; shared, read-only
	r    bytes.Reader // reader over data (inline to avoid an allocation)
	size int64
}

func memBlob(data []byte) *Blob {
	b := &Blob{data: data, size: int64(len(data))}
	b.r.Reset(data)
	return b
}

func (b *Blob) Read(p []byte) (int, error) {
	if b.f != nil {
		return b.f.Read(p)
	}
	return b.r.Read(p)
}

func (b *Blob) Seek(off int64, whence int) (int64, error) {
	if b.f != nil {
		return b.f.Seek(off, whence)
	}
	return b.r.Seek(off, whence)
}

func (b *Blob) ReadAt(p []byte, off int64) (int, error) {
	if b.f != nil {
		return b.f.ReadAt(p, off)
	}
	return b.r.ReadAt(p, off)
}

// WriteTo copies the rest of the blob to w. For a file-backed blob the copy
// goes through io.Copy with the *os.File itself, so sockets get
// sendfile/splice.
func (b *Blob) WriteTo(w io.Writer) (int64, error) {
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

// File returns the underlying file, or nil when served from memory.
func (b *Blob) File() *os.File { return b.f }

// Bytes returns the whole content when served from the memory cache, nil
// otherwise. The slice is shared with the cache and must not be modified.
func (b *Blob) Bytes() []byte { return b.data }

var (
	_ io.ReadSeekCloser = (*Blob)(nil)
	_ io.ReaderAt       = (*Blob)(nil)
	_ io.WriterTo       = (*Blob)(nil)
)
