package store

import (
	"bytes"
	"errors"
	"io"
	"os"
)

// Blob is an open, committed blob. It is backed by a file of its own (so
// an HTTP server can use sendfile via File or WriteTo), by a section of a
// segment file (a small blob served without being read: Section, for
// sendfile at an offset) or, for small blobs, by an in-memory slice. Like *os.File, a Blob's Read and Seek share one
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

	// A small blob read from its segment: seg (a reference held until
	// Close) holds the content at off; pos is Read's offset in it.
	seg      *segment
	off, pos int64
}

// sectionBlob is a verified small blob's content in seg at off; the
// caller holds a reference on seg, which the Blob's Close gives back.
func sectionBlob(seg *segment, off, size int64) *Blob {
	return &Blob{seg: seg, off: off, size: size}
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
	if b.seg != nil {
		n, err := b.ReadAt(p, b.pos)
		b.pos += int64(n)
		return n, err
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
	if b.seg != nil {
		switch whence {
		case io.SeekCurrent:
			off += b.pos
		case io.SeekEnd:
			off += b.size
		}
		if off < 0 {
			return b.pos, errors.New("store: seek before the start of a blob")
		}
		b.pos = off
		return off, nil
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
	if b.seg != nil {
		if off >= b.size {
			return 0, io.EOF
		}
		short := int64(len(p)) > b.size-off
		if short {
			p = p[:b.size-off]
		}
		n, err := b.seg.f.ReadAt(p, b.off+off)
		if err == nil && short {
			err = io.EOF
		}
		return n, err
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
	if b.seg != nil {
		return io.Copy(w, struct{ io.Reader }{b})
	}
	return b.r.WriteTo(w)
}

// Close releases the file, if any (a segment's: its reference). Closing
// a memory blob is a no-op.
func (b *Blob) Close() error {
	if b.f != nil {
		return b.f.Close()
	}
	if b.seg != nil {
		b.seg.release()
		b.seg = nil
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

// Section returns the segment file that holds a small blob's content and
// the content's offset in it (for sendfile at an offset: the file is
// shared, its own offset must not be used), or nil when the blob is not
// served from a segment or the store's FS is not the operating system's.
// The file is valid until Close.
func (b *Blob) Section() (*os.File, int64) {
	if b.seg == nil {
		return nil, 0
	}
	f, _ := b.seg.f.(*os.File)
	return f, b.off
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
