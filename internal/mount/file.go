package mount

import (
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/mure-dev/mure/client"
)

// fileNode is a file. Its attributes are asked of the cluster at every
// stat (the kernel caches them for no time), except while this mount
// writes it: then they are the spool's.
type fileNode struct {
	fs.Inode
	m *mnt

	mu       sync.Mutex
	info     client.FileInfo // the last version seen
	cached   uint64          // the version whose pages the kernel may keep
	writing  *writeHandle    // the newest open writer, if any
	unlinked bool            // removed while open: its writers upload nothing
}

// unlink marks the file removed while it may be open.
func (f *fileNode) unlink() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unlinked = true
}

func (f *fileNode) isUnlinked() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unlinked
}

// hasWriter reports whether a writer is open (a new file is in the
// cluster only once one closes).
func (f *fileNode) hasWriter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writing != nil
}

var (
	_ fs.NodeOpener    = (*fileNode)(nil)
	_ fs.NodeGetattrer = (*fileNode)(nil)
	_ fs.NodeSetattrer = (*fileNode)(nil)
)

func (f *fileNode) key() string { return f.Path(nil) }

func (f *fileNode) seen(info *client.FileInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.info = *info
}

// Getattr implements fs.NodeGetattrer.
func (f *fileNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.SetTimeout(0)
	w, _ := fh.(*writeHandle)
	if w == nil {
		f.mu.Lock()
		w = f.writing
		f.mu.Unlock()
	}
	if w != nil {
		size, mod := w.stat()
		f.m.fileAttr(&out.Attr, size, mod)
		if f.isUnlinked() {
			out.Nlink = 0
		}
		return 0
	}
	ctx, cancel := f.m.ctx(ctx)
	defer cancel()
	info, err := f.m.files.Stat(ctx, f.key())
	if err != nil {
		return errno(err)
	}
	f.seen(info)
	f.m.fileAttr(&out.Attr, info.Size, info.Modified)
	return 0
}

// Setattr changes the size (truncate, ftruncate); modes, owners and
// times are accepted and not kept.
func (f *fileNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		w, _ := fh.(*writeHandle)
		if w == nil {
			// truncate(2) on a path: open, cut, write back.
			var err error
			if w, err = f.newWriter(ctx, f.key(), syscall.O_RDWR); err != nil {
				return errno(err)
			}
			defer w.Release(ctx)
			if e := w.truncate(int64(size)); e != 0 {
				return e
			}
			if e := w.Flush(ctx); e != 0 {
				return e
			}
		} else if e := w.truncate(int64(size)); e != 0 {
			return e
		}
	}
	return f.Getattr(ctx, fh, out)
}

// Open opens the current version for reading, or a copy of it in the
// spool for writing (empty with O_TRUNC). A reader keeps the kernel's
// cached pages only while the version is the one they were read from.
func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	k := f.key()
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		h, err := f.newWriter(ctx, k, flags)
		if err != nil {
			return nil, 0, errno(err)
		}
		return h, 0, 0
	}
	cctx, cancel := f.m.ctx(ctx)
	info, err := f.m.files.Stat(cctx, k)
	cancel()
	if err != nil {
		return nil, 0, errno(err)
	}
	f.mu.Lock()
	f.info = *info
	keep := f.cached == info.Version
	f.cached = info.Version
	f.mu.Unlock()
	var fl uint32
	if keep {
		fl = fuse.FOPEN_KEEP_CACHE
	}
	return &readHandle{m: f.m, key: k, version: info.Version, size: info.Size}, fl, 0
}

// written records a version this mount wrote: the kernel's pages hold it.
func (f *fileNode) written(info *client.FileInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.info = *info
	f.cached = info.Version
}

// newWriter opens a spool for k: empty with O_TRUNC, else filled with the
// current version when first needed (streamed to disk).
func (f *fileNode) newWriter(_ context.Context, k string, flags uint32) (*writeHandle, error) {
	h, err := newWriteHandle(f, k, flags)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.writing = h
	f.mu.Unlock()
	return h, nil
}

func (f *fileNode) released(h *writeHandle) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writing == h {
		f.writing = nil
	}
}

// now is the time a new file shows until it is written.
func now() time.Time { return time.Now() }
