package mount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/mure-dev/mure/client"
)

// Files is what the mount needs of the cluster; *client.Client is one.
type Files interface {
	Get(ctx context.Context, path string, o *client.GetOptions) (*client.Reader, error)
	Stat(ctx context.Context, path string) (*client.FileInfo, error)
	Put(ctx context.Context, path string, body io.Reader, o *client.PutOptions) (*client.FileInfo, error)
	Delete(ctx context.Context, path string, o *client.DeleteOptions) error
	List(ctx context.Context, o client.ListOptions) (*client.ListPage, error)
	Copy(ctx context.Context, src, dst string, o *client.CopyOptions) (*client.FileInfo, error)
}

// DirMarker keeps a folder made by mkdir while it is empty (the same
// marker as the WebDAV face's; listings hide it).
const DirMarker = ".mure-dir"

// hidden are other faces' bookkeeping names, never shown nor made here:
// folder markers (this one's, S3's bucket and folder markers) and S3's
// multipart uploads.
var hidden = map[string]bool{DirMarker: true, ".s3bucket": true, ".s3folder": true, ".s3uploads": true}

// markers are the files whose only job is to keep a folder: a folder that
// holds nothing else is empty.
var markers = map[string]bool{DirMarker: true, ".s3bucket": true, ".s3folder": true}

// onlyMarkers reports whether every key in keys is a marker of the folder k.
func onlyMarkers(k string, keys []client.FileInfo) bool {
	for _, f := range keys {
		if !markers[strings.TrimPrefix(f.Path, k+"/")] {
			return false
		}
	}
	return true
}

// Config configures a mount.
type Config struct {
	// Files is the cluster (a client of one or more nodes: with several,
	// a dead node's calls go to the next).
	Files Files
	// Spool is the directory of the temporary files that hold what is
	// written until close ("": the system's temporary directory).
	Spool string
	// OpTimeout bounds one call to the cluster that moves no file body,
	// and each read of a body: past it the call fails with EIO rather
	// than hang (0: 30s).
	OpTimeout time.Duration
	// Debug logs every FUSE request.
	Debug bool
}

// Mount is a mounted cluster.
type Mount struct {
	dir string
	srv *fuse.Server
}

// mnt is what every node of the tree shares.
type mnt struct {
	files    Files
	spool    string
	timeout  time.Duration
	uid, gid uint32
}

// Timeouts of the kernel's caches: names and folders for a second; a
// file's attributes not at all, so that every stat and every open sees
// the cluster's current version (close-to-open).
const (
	entryTimeout = time.Second
	dirTimeout   = time.Second
)

// New mounts the cluster on dir and returns once the mount is ready.
func New(dir string, cfg Config) (*Mount, error) {
	if cfg.Files == nil {
		return nil, errors.New("mount: no cluster client")
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = 30 * time.Second
	}
	if cfg.Spool == "" {
		cfg.Spool = os.TempDir()
	}
	m := &mnt{files: cfg.Files, spool: cfg.Spool, timeout: cfg.OpTimeout, uid: uint32(os.Getuid()), gid: uint32(os.Getgid())}
	et, at, nt := entryTimeout, dirTimeout, time.Duration(0)
	opts := &fs.Options{
		EntryTimeout: &et, AttrTimeout: &at, NegativeTimeout: &nt, UID: m.uid, GID: m.gid,
		MountOptions: fuse.MountOptions{FsName: "mure", Name: "mure", Debug: cfg.Debug,
			// Reads in order: a forwarded stream is read forward.
			SyncRead: true, MaxWrite: 1 << 20, DisableXAttrs: true},
	}
	srv, err := fs.Mount(dir, &dirNode{m: m}, opts)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	return &Mount{dir: dir, srv: srv}, nil
}

// Wait returns when the mount is gone (unmounted by Close or by
// fusermount3 -u).
func (m *Mount) Wait() { m.srv.Wait() }

// Close unmounts: a clean unmount, or, while files are in use, a lazy one
// (the directory is detached now and freed when the last user leaves).
// It waits at most timeout for the server to stop.
func (m *Mount) Close(timeout time.Duration) error {
	err := m.srv.Unmount()
	if err != nil {
		if lerr := syscall.Unmount(m.dir, syscall.MNT_DETACH); lerr != nil {
			return fmt.Errorf("unmount %s: %w (lazy unmount: %v)", m.dir, err, lerr)
		}
	}
	done := make(chan struct{})
	go func() { m.srv.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("unmount %s: the server did not stop within %s", m.dir, timeout)
	}
}

// ctx bounds one call that moves no body.
func (m *mnt) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, m.timeout)
}

// Name limits: a name of at most 255 bytes (NAME_MAX), a key of at most
// 1024 (the file API's); longer is ENAMETOOLONG.
const (
	maxName = 255
	maxKey  = 1024
)

// checkName refuses a name, or the key it makes (with room for a
// folder's marker when dir), that the cluster cannot hold.
func checkName(name, k string, dir bool) syscall.Errno {
	n := len(k)
	if dir {
		n += len("/" + DirMarker)
	}
	if len(name) > maxName || n > maxKey {
		return syscall.ENAMETOOLONG
	}
	return 0
}

// join is the key of name in the folder dir ("" for the root).
func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return path.Join(dir, name)
}

// isDir reports whether a key lies below k.
func (m *mnt) isDir(ctx context.Context, k string, consistent bool) (bool, error) {
	if k == "" {
		return true, nil
	}
	page, err := m.files.List(ctx, client.ListOptions{Prefix: k + "/", Limit: 1, Consistent: consistent})
	if err != nil {
		return false, err
	}
	return len(page.Files) > 0, nil
}

// below lists every key under the folder k, hidden ones included.
func (m *mnt) below(ctx context.Context, k string) ([]client.FileInfo, error) {
	var all []client.FileInfo
	after := ""
	for {
		page, err := m.files.List(ctx, client.ListOptions{Prefix: k + "/", After: after, Limit: 1000, Consistent: after == ""})
		if err != nil {
			return nil, err
		}
		all = append(all, page.Files...)
		if page.Next == "" {
			return all, nil
		}
		after = page.Next
	}
}

func (m *mnt) dirAttr(a *fuse.Attr) {
	a.Mode = syscall.S_IFDIR | 0o755
	a.Nlink = 2
	a.Uid, a.Gid = m.uid, m.gid
}

func (m *mnt) fileAttr(a *fuse.Attr, size int64, mod time.Time) {
	a.Mode = syscall.S_IFREG | 0o644
	a.Nlink = 1
	a.Size = uint64(max(size, 0))
	a.Blocks = (a.Size + 511) / 512
	a.Blksize = 1 << 20
	a.Uid, a.Gid = m.uid, m.gid
	a.SetTimes(nil, &mod, &mod)
}
