package webdav

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"syscall"

	xdav "golang.org/x/net/webdav"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/auth/authhttp"
	"github.com/mure-dev/mure/internal/files"
)

// Files is the file API this face calls (files.Service is one).
type Files interface {
	Put(ctx context.Context, path string, body io.Reader, o files.PutOptions) (files.Info, error)
	Open(ctx context.Context, path string, o files.OpenOptions) (*files.Reader, error)
	Stat(ctx context.Context, path string, o files.OpenOptions) (files.Info, error)
	Delete(ctx context.Context, path string, o files.DeleteOptions) error
	List(ctx context.Context, o files.ListOptions) (files.ListPage, error)
	Rename(ctx context.Context, src, dst string, o files.CopyOptions) (files.Info, error)
	Copy(ctx context.Context, src, dst string, o files.CopyOptions) (files.Info, error)
}

// DirMarker is the empty file that keeps a folder made by MKCOL (or a
// mount's mkdir) while nothing else lies in it. Listings hide it, and so
// the S3 face's markers; none of them can be written through this face.
const DirMarker = ".mure-dir"

// hidden are the names of other faces' bookkeeping (the S3 face's bucket
// marker, folder marker and multipart uploads folder; this face does not
// import it).
var hidden = map[string]bool{DirMarker: true, ".s3bucket": true, ".s3folder": true, ".s3uploads": true}

// FS is a webdav.FileSystem over the file API. The namespace is flat (keys
// like a/b/c); this face shows it as a tree (docs/access.md, "Folders"):
//   - a folder exists while a key lies below it (a/ exists while a/b does);
//   - MKCOL makes a folder by writing its DirMarker;
//   - when both a file a and keys below a/ exist (the native API and S3
//     allow it), the folder wins: a is a collection here and the file a
//     is reached through the native API or S3 only;
//   - this face never makes such a pair: it refuses a file where a
//     folder is and a key below a file.
//
// Every call is forwarded inside the cluster when another node must
// serve it, and checked against the caller's grants.
type FS struct {
	files Files
	open  bool // no authentication: every caller may do everything
}

// NewFS returns the file system over fs; open lets every caller do
// everything (a node started with --auth=false).
func NewFS(fs Files, open bool) *FS { return &FS{files: fs, open: open} }

var fwd = files.Forwarding{Forward: true}

// key is the file key of a webdav name ("" for the root).
func key(name string) string { return strings.TrimPrefix(slashClean(name), "/") }

func slashClean(name string) string {
	if name == "" || name[0] != '/' {
		name = "/" + name
	}
	return path.Clean(name)
}

// dirPrefix is the listing prefix of the folder k.
func dirPrefix(k string) string {
	if k == "" {
		return ""
	}
	return k + "/"
}

func isHidden(k string) bool {
	for seg := range strings.SplitSeq(k, "/") {
		if hidden[seg] {
			return true
		}
	}
	return false
}

// allow checks the caller's grants for a on the key k.
func (f *FS) allow(ctx context.Context, a auth.Action, k string) error {
	if f.open {
		return nil
	}
	p, ok := authhttp.PrincipalFrom(ctx)
	if !ok {
		p = auth.Anonymous(nil)
	}
	if p.Allowed(a, k) {
		return nil
	}
	return &os.PathError{Op: a.String(), Path: "/" + k, Err: fmt.Errorf("%w: %s may not %s %q", os.ErrPermission, p.Name(), a, k)}
}

// isDir reports whether the folder k exists: some key lies below it.
// Exact (after catching up with the leader), a folder made or removed
// through another node before the call is seen.
func (f *FS) isDir(ctx context.Context, k string) (bool, error) {
	return f.dirCheck(ctx, k, false)
}

// hasDir is isDir for a write's parent: a folder this node knows is
// taken at once (one removed elsewhere a moment ago may be taken too: the
// write then makes it again); one it does not know is looked for again
// after catching up with the leader.
func (f *FS) hasDir(ctx context.Context, k string) (bool, error) {
	return f.dirCheck(ctx, k, true)
}

func (f *FS) dirCheck(ctx context.Context, k string, localFirst bool) (bool, error) {
	if k == "" {
		return true, nil
	}
	tries := []bool{true}
	if localFirst {
		tries = []bool{false, true}
	}
	for _, consistent := range tries {
		var page files.ListPage
		var err error
		_ = ridingElections(ctx, func() error {
			page, err = f.files.List(ctx, files.ListOptions{Prefix: k + "/", Limit: 1, Consistent: consistent})
			if errors.Is(err, files.ErrUnavailable) {
				return err // no leader for a moment: ask again
			}
			return nil
		})
		if err != nil {
			return false, err
		}
		if len(page.Files) > 0 {
			return true, nil
		}
	}
	return false, nil
}

func notExist(name string) error { return &os.PathError{Op: "stat", Path: name, Err: os.ErrNotExist} }

// stat finds what the name is: a folder (wins) or a file.
func (f *FS) stat(ctx context.Context, name string) (os.FileInfo, error) {
	k := key(name)
	if k == "" {
		return dirInfo(""), nil
	}
	if isHidden(k) {
		return nil, notExist(name)
	}
	if err := f.allow(ctx, auth.Read, k); err != nil {
		if f.allow(ctx, auth.Read, dirPrefix(k)) != nil {
			return nil, err
		}
	}
	dir, err := f.isDir(ctx, k)
	if err != nil {
		return nil, err
	}
	if dir {
		return dirInfo(k), nil
	}
	if f.allow(ctx, auth.Read, k) != nil {
		// Only the folder k/ is readable, and it does not exist; a file
		// k, if any, is not the caller's to see.
		return nil, notExist(name)
	}
	info, err := f.files.Stat(ctx, k, files.OpenOptions{Forwarding: fwd})
	if errors.Is(err, files.ErrNotFound) || errors.Is(err, files.ErrBadPath) {
		return nil, notExist(name)
	}
	if err != nil {
		return nil, err
	}
	return fileInfo{info}, nil
}

// Stat implements webdav.FileSystem.
func (f *FS) Stat(ctx context.Context, name string) (os.FileInfo, error) { return f.stat(ctx, name) }

// OpenFile implements webdav.FileSystem: a folder, a file to read (also
// O_RDWR without O_CREATE|O_TRUNC, which webdav uses for properties), or
// a new version to write (O_CREATE or O_TRUNC), streamed into one Put
// that becomes visible at Close.
func (f *FS) OpenFile(ctx context.Context, name string, flag int, _ os.FileMode) (xdav.File, error) {
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		return f.create(ctx, name, flag)
	}
	fi, err := f.stat(ctx, name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return &dirFile{fs: f, ctx: ctx, info: fi.(dirInfo)}, nil
	}
	info := fi.(fileInfo).Info
	if q := requestOf(ctx); q != nil && (q.method == http.MethodGet || q.method == http.MethodHead) && key(q.path) == info.Path && info.ContentType != "" {
		// x/net/webdav leaves a GET's type to http.ServeContent, which
		// keeps one already set.
		q.header.Set("Content-Type", info.ContentType)
	}
	return &readFile{fs: f, ctx: ctx, info: info}, nil
}

// create opens a new version of the file name for writing.
func (f *FS) create(ctx context.Context, name string, flag int) (xdav.File, error) {
	k := key(name)
	if k == "" || isHidden(k) {
		return nil, &os.PathError{Op: "create", Path: name, Err: os.ErrPermission}
	}
	if err := f.allow(ctx, auth.Write, k); err != nil {
		return nil, err
	}
	if err := files.ValidatePath(k); err != nil {
		return nil, err
	}
	if err := f.placeable(ctx, name, k); err != nil {
		return nil, err
	}
	var cond files.Cond
	if flag&os.O_EXCL != 0 {
		cond.IfNoneMatch = true
	}
	size := int64(-1)
	var attrs files.Attrs
	q := requestOf(ctx)
	if q != nil && q.method == http.MethodPut && key(q.path) == k {
		size = q.length // a body that ends early is then refused
		attrs.ContentType = q.contentType
	}
	return startWrite(ctx, f.files, k, size, cond, attrs, q), nil
}

// placeable checks that a file or folder may be made at k: no folder is
// there, and its parent is a folder (not missing, not a file).
func (f *FS) placeable(ctx context.Context, name, k string) error {
	dir, err := f.isDir(ctx, k)
	if err != nil {
		return err
	}
	if dir {
		return &os.PathError{Op: "create", Path: name, Err: syscall.EISDIR}
	}
	parent := path.Dir(k)
	if parent == "." {
		return nil
	}
	ok, err := f.hasDir(ctx, parent)
	if err != nil {
		return err
	}
	if !ok {
		// Missing, or a file (ENOTDIR): either way the parent is not a
		// collection (RFC 4918: 409 Conflict).
		return &os.PathError{Op: "create", Path: name, Err: os.ErrNotExist}
	}
	return nil
}

// Mkdir implements webdav.FileSystem: it writes the folder's marker.
func (f *FS) Mkdir(ctx context.Context, name string, _ os.FileMode) error {
	k := key(name)
	if k == "" {
		return &os.PathError{Op: "mkdir", Path: name, Err: os.ErrExist}
	}
	if isHidden(k) {
		return &os.PathError{Op: "mkdir", Path: name, Err: os.ErrPermission}
	}
	if err := f.allow(ctx, auth.Write, dirPrefix(k)); err != nil {
		return err
	}
	if err := files.ValidatePath(k); err != nil {
		return err
	}
	if _, err := f.stat(ctx, name); err == nil {
		return &os.PathError{Op: "mkdir", Path: name, Err: os.ErrExist}
	} else if !os.IsNotExist(err) {
		return err
	}
	if err := f.placeable(ctx, name, k); err != nil {
		return err
	}
	_, err := f.files.Put(ctx, k+"/"+DirMarker, strings.NewReader(""), files.PutOptions{Forwarding: fwd, Size: 0, Cond: files.Cond{IfNoneMatch: true}})
	if errors.Is(err, files.ErrPrecondition) {
		return &os.PathError{Op: "mkdir", Path: name, Err: os.ErrExist}
	}
	return err
}

// below lists every key under the folder k, hidden ones included.
func (f *FS) below(ctx context.Context, k string) ([]files.Info, error) {
	var all []files.Info
	after := ""
	for {
		page, err := f.files.List(ctx, files.ListOptions{Prefix: dirPrefix(k), After: after, Limit: 1000, Consistent: after == ""})
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

// RemoveAll implements webdav.FileSystem: a file, or a folder with every
// key below it (and a file of the same name the folder hides). The caller
// must be allowed to delete every one of them; nothing is deleted
// otherwise. Not atomic: a failure midway leaves the rest.
func (f *FS) RemoveAll(ctx context.Context, name string) error {
	k := key(name)
	if k == "" {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrPermission}
	}
	keys := []string{k}
	under, err := f.below(ctx, k)
	if err != nil {
		return err
	}
	for _, in := range under {
		keys = append(keys, in.Path)
	}
	for _, p := range keys {
		if err := f.allow(ctx, auth.Write, p); err != nil {
			return err
		}
	}
	found := len(under) > 0
	for _, p := range keys {
		err := f.files.Delete(ctx, p, files.DeleteOptions{Forwarding: fwd})
		switch {
		case err == nil:
			found = true
		case errors.Is(err, files.ErrNotFound):
		default:
			return err
		}
	}
	if !found {
		return notExist(name)
	}
	return nil
}

// Rename implements webdav.FileSystem: a file moves with the file API's
// Rename (a copy, then a delete of the copied version: not atomic); a
// folder moves key by key.
func (f *FS) Rename(ctx context.Context, oldName, newName string) error {
	from, to := key(oldName), key(newName)
	if from == "" || to == "" || isHidden(to) {
		return &os.PathError{Op: "rename", Path: newName, Err: os.ErrPermission}
	}
	if to == from || strings.HasPrefix(to, from+"/") {
		return &os.PathError{Op: "rename", Path: newName, Err: fmt.Errorf("%w: cannot move %s into itself", os.ErrInvalid, oldName)}
	}
	if err := files.ValidatePath(to); err != nil {
		return err
	}
	fi, err := f.stat(ctx, oldName)
	if err != nil {
		return err
	}
	if err := f.placeable(ctx, newName, to); err != nil {
		return err
	}
	if !fi.IsDir() {
		return f.move(ctx, from, to)
	}
	under, err := f.below(ctx, from)
	if err != nil {
		return err
	}
	for _, in := range under {
		if err := f.allow(ctx, auth.Write, in.Path); err != nil {
			return err
		}
		if err := f.allow(ctx, auth.Write, to+strings.TrimPrefix(in.Path, from)); err != nil {
			return err
		}
	}
	for _, in := range under {
		if err := f.move(ctx, in.Path, to+strings.TrimPrefix(in.Path, from)); err != nil {
			return err
		}
	}
	return nil
}

func (f *FS) move(ctx context.Context, from, to string) error {
	if err := f.allow(ctx, auth.Write, from); err != nil {
		return err
	}
	if err := f.allow(ctx, auth.Write, to); err != nil {
		return err
	}
	_, err := f.files.Rename(ctx, from, to, files.CopyOptions{Forwarding: fwd})
	return err
}
