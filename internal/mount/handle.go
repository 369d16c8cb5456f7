package mount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/mure-dev/mure/client"
)

// readHandle reads one version of a file as a stream from the cluster,
// opened again at the offset of a read that does not follow the last one.
// A reopening that finds another version fails (ESTALE) rather than mix
// two versions. Each read is bounded by the mount's OpTimeout: a node that
// stops answering gives EIO, never a hang.
type readHandle struct {
	m       *mnt
	key     string
	version uint64
	size    int64

	mu     sync.Mutex
	rd     *client.Reader
	cancel context.CancelFunc // ends rd's request
	pos    int64
}

var (
	_ fs.FileReader   = (*readHandle)(nil)
	_ fs.FileReleaser = (*readHandle)(nil)
)

// Read implements fs.FileReader.
func (h *readHandle) Read(_ context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off >= h.size {
		return fuse.ReadResultData(nil), 0
	}
	if h.rd != nil && off != h.pos {
		h.closeStream()
	}
	if h.rd == nil {
		// The stream outlives this call: its context is its own.
		sctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel
		watch := time.AfterFunc(h.m.timeout, cancel)
		rd, err := h.m.files.Get(sctx, h.key, &client.GetOptions{Offset: off})
		watch.Stop()
		if err != nil {
			h.closeStream()
			return nil, errno(err)
		}
		h.rd, h.pos = rd, off
		if rd.Info.Version != 0 && rd.Info.Version != h.version {
			h.closeStream()
			return nil, syscall.ESTALE
		}
	}
	want := min(int64(len(dest)), h.size-off)
	watch := time.AfterFunc(h.m.timeout, h.cancel)
	n, err := io.ReadFull(h.rd, dest[:want])
	watch.Stop()
	h.pos += int64(n)
	if err != nil {
		// A short read is an error: the version's size is known, so a
		// stream that ends early never passes for the file's end.
		h.closeStream()
		return nil, errno(fmt.Errorf("read %s at %d: %w", h.key, off, err))
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *readHandle) closeStream() {
	if h.rd != nil {
		_ = h.rd.Close()
		h.rd = nil
	}
	if h.cancel != nil {
		h.cancel()
		h.cancel = nil
	}
}

// Release implements fs.FileReleaser.
func (h *readHandle) Release(context.Context) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closeStream()
	return 0
}

// writeHandle holds what is written to a file in a spool file on disk
// (unlinked at once, so nothing is left behind), filled from the current
// version only when a write or read needs it (an open with O_TRUNC, or a
// truncate to 0 first, never downloads). Flush (close) and fsync stream
// the spool to the cluster as one new version.
type writeHandle struct {
	f      *fileNode
	key    string
	append bool

	mu     sync.Mutex
	spool  *os.File
	size   int64
	loaded bool // the spool holds the file's content
	dirty  bool // written since the last upload
	mod    time.Time
}

var (
	_ fs.FileReader   = (*writeHandle)(nil)
	_ fs.FileWriter   = (*writeHandle)(nil)
	_ fs.FileFlusher  = (*writeHandle)(nil)
	_ fs.FileFsyncer  = (*writeHandle)(nil)
	_ fs.FileReleaser = (*writeHandle)(nil)
)

func newWriteHandle(f *fileNode, k string, flags uint32) (*writeHandle, error) {
	sp, err := os.CreateTemp(f.m.spool, "mure-mount-*")
	if err != nil {
		return nil, fmt.Errorf("spool for %s: %w", k, err)
	}
	_ = os.Remove(sp.Name())
	h := &writeHandle{f: f, key: k, append: flags&syscall.O_APPEND != 0, spool: sp, mod: now()}
	if flags&syscall.O_TRUNC != 0 {
		h.loaded = true
	} else {
		f.mu.Lock()
		h.size = f.info.Size
		f.mu.Unlock()
	}
	return h, nil
}

// load fills the spool with the current version (called with mu held, or
// before the handle is shared).
func (h *writeHandle) load(ctx context.Context) error {
	if h.loaded {
		return nil
	}
	rd, err := h.f.m.files.Get(ctx, h.key, nil)
	if errors.Is(err, client.ErrNotFound) {
		h.loaded, h.size = true, 0
		return nil
	}
	if err != nil {
		return err
	}
	defer rd.Close()
	n, err := io.Copy(h.spool, rd)
	if err != nil {
		return fmt.Errorf("read %s into the spool: %w", h.key, err)
	}
	h.loaded, h.size = true, n
	return nil
}

func (h *writeHandle) stat() (int64, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.size, h.mod
}

// Write implements fs.FileWriter.
func (h *writeHandle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.load(ctx); err != nil {
		return 0, errno(err)
	}
	if h.append {
		off = h.size
	}
	n, err := h.spool.WriteAt(data, off)
	h.size = max(h.size, off+int64(n))
	h.dirty, h.mod = true, now()
	if err != nil {
		return uint32(n), errno(err)
	}
	return uint32(n), 0
}

// Read implements fs.FileReader: what this handle holds.
func (h *writeHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.load(ctx); err != nil {
		return nil, errno(err)
	}
	n, err := h.spool.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, errno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *writeHandle) truncate(size int64) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	if size == 0 {
		h.loaded = true // nothing of the old content is needed
	} else if err := h.load(context.Background()); err != nil {
		return errno(err)
	}
	if err := h.spool.Truncate(size); err != nil {
		return errno(err)
	}
	h.size, h.dirty, h.mod = size, true, now()
	return 0
}

// Flush implements fs.FileFlusher: close(2) uploads what was written; an
// upload that fails fails the close (EIO, ENOSPC, EACCES).
func (h *writeHandle) Flush(ctx context.Context) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.dirty {
		return 0
	}
	if h.f.isUnlinked() {
		// Removed while open: what is written stays in the spool, for
		// this handle's reads, and never reaches the cluster.
		h.dirty = false
		return 0
	}
	var body io.Reader
	if h.size > 0 {
		body = io.NewSectionReader(h.spool, 0, h.size)
	}
	info, err := h.f.m.files.Put(ctx, h.key, body, &client.PutOptions{Size: h.size})
	if err != nil {
		return errno(err)
	}
	h.dirty = false
	h.f.written(info)
	return 0
}

// Fsync implements fs.FileFsyncer: the same upload as close.
func (h *writeHandle) Fsync(ctx context.Context, _ uint32) syscall.Errno { return h.Flush(ctx) }

// Release implements fs.FileReleaser.
func (h *writeHandle) Release(context.Context) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.spool != nil {
		_ = h.spool.Close()
		h.spool = nil
	}
	h.f.released(h)
	return 0
}
