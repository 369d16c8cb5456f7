package mount

import (
	"context"
	"errors"
	"sort"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/mure-dev/mure/client"
)

// dirNode is a folder (the root too).
type dirNode struct {
	fs.Inode
	m *mnt
}

var (
	_ fs.NodeLookuper  = (*dirNode)(nil)
	_ fs.NodeReaddirer = (*dirNode)(nil)
	_ fs.NodeMkdirer   = (*dirNode)(nil)
	_ fs.NodeCreater   = (*dirNode)(nil)
	_ fs.NodeUnlinker  = (*dirNode)(nil)
	_ fs.NodeRmdirer   = (*dirNode)(nil)
	_ fs.NodeRenamer   = (*dirNode)(nil)
	_ fs.NodeGetattrer = (*dirNode)(nil)
	_ fs.NodeSetattrer = (*dirNode)(nil)
	_ fs.NodeStatfser  = (*dirNode)(nil)
)

func (d *dirNode) key() string { return d.Path(nil) }

// Getattr implements fs.NodeGetattrer.
func (d *dirNode) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.m.dirAttr(&out.Attr)
	return 0
}

// Setattr accepts and ignores modes, owners and times: the cluster keeps
// none for folders (cp -a, rsync -a and git set them).
func (d *dirNode) Setattr(_ context.Context, _ fs.FileHandle, _ *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	d.m.dirAttr(&out.Attr)
	return 0
}

// Statfs answers a large, mostly free file system, so that programs that
// check for space before writing go ahead; the cluster refuses a write
// that does not fit (ENOSPC).
func (d *dirNode) Statfs(_ context.Context, out *fuse.StatfsOut) syscall.Errno {
	const blocks = 1 << 40 / 4096
	out.Bsize, out.Frsize = 4096, 4096
	out.Blocks, out.Bfree, out.Bavail = blocks, blocks, blocks
	out.Files, out.Ffree = 1<<32, 1<<32
	out.NameLen = 255
	return 0
}

// Lookup finds name: a folder (it wins over a file of the same name) or
// a file.
func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if hidden[name] {
		return nil, syscall.ENOENT
	}
	k := join(d.key(), name)
	if e := checkName(name, k, false); e != 0 {
		return nil, e
	}
	ctx, cancel := d.m.ctx(ctx)
	defer cancel()
	dir, err := d.m.isDir(ctx, k, false)
	if err != nil {
		return nil, errno(err)
	}
	if dir {
		d.m.dirAttr(&out.Attr)
		if ch := d.GetChild(name); ch != nil && ch.IsDir() {
			return ch, 0
		}
		return d.NewInode(ctx, &dirNode{m: d.m}, fs.StableAttr{Mode: syscall.S_IFDIR}), 0
	}
	info, err := d.m.files.Stat(ctx, k)
	if err != nil {
		return nil, errno(err)
	}
	d.m.fileAttr(&out.Attr, info.Size, info.Modified)
	out.SetAttrTimeout(0)
	if ch := d.GetChild(name); ch != nil && !ch.IsDir() {
		ch.Operations().(*fileNode).seen(info)
		return ch, 0
	}
	f := &fileNode{m: d.m}
	f.seen(info)
	return d.NewInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG}), 0
}

// Readdir lists the folder: folders and files, a folder hiding a file of
// its name, hidden names left out.
func (d *dirNode) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	ctx, cancel := d.m.ctx(ctx)
	defer cancel()
	prefix := ""
	if k := d.key(); k != "" {
		prefix = k + "/"
	}
	dirs := map[string]bool{}
	var out []fuse.DirEntry
	var fileNames []string
	after := ""
	for {
		page, err := d.m.files.List(ctx, client.ListOptions{Prefix: prefix, Delimiter: "/", After: after, Limit: 1000, Consistent: after == ""})
		if err != nil {
			return nil, errno(err)
		}
		for _, p := range page.Prefixes {
			name := strings.TrimSuffix(strings.TrimPrefix(p, prefix), "/")
			if !hidden[name] {
				dirs[name] = true
				out = append(out, fuse.DirEntry{Name: name, Mode: syscall.S_IFDIR})
			}
		}
		for _, f := range page.Files {
			if name := strings.TrimPrefix(f.Path, prefix); !hidden[name] {
				fileNames = append(fileNames, name)
			}
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	for _, name := range fileNames {
		if !dirs[name] {
			out = append(out, fuse.DirEntry{Name: name, Mode: syscall.S_IFREG})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return fs.NewListDirStream(out), 0
}

// exists reports whether name is a folder or a file here.
func (d *dirNode) exists(ctx context.Context, k string) (bool, error) {
	dir, err := d.m.isDir(ctx, k, true)
	if err != nil || dir {
		return dir, err
	}
	_, err = d.m.files.Stat(ctx, k)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, client.ErrNotFound):
		return false, nil
	}
	return false, err
}

// Mkdir writes the new folder's marker.
func (d *dirNode) Mkdir(ctx context.Context, name string, _ uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if hidden[name] {
		return nil, syscall.EACCES
	}
	k := join(d.key(), name)
	if e := checkName(name, k, true); e != 0 {
		return nil, e
	}
	ctx, cancel := d.m.ctx(ctx)
	defer cancel()
	if ok, err := d.exists(ctx, k); err != nil || ok {
		if err != nil {
			return nil, errno(err)
		}
		return nil, syscall.EEXIST
	}
	if _, err := d.m.files.Put(ctx, k+"/"+DirMarker, nil, &client.PutOptions{IfNoneMatch: true}); err != nil {
		return nil, errno(err)
	}
	d.m.dirAttr(&out.Attr)
	return d.NewInode(ctx, &dirNode{m: d.m}, fs.StableAttr{Mode: syscall.S_IFDIR}), 0
}

// Create makes a new file, written at close (an empty one if nothing is
// written).
func (d *dirNode) Create(ctx context.Context, name string, flags uint32, _ uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if hidden[name] {
		return nil, nil, 0, syscall.EACCES
	}
	k := join(d.key(), name)
	if e := checkName(name, k, false); e != 0 {
		return nil, nil, 0, e
	}
	cctx, cancel := d.m.ctx(ctx)
	dir, err := d.m.isDir(cctx, k, true)
	if err == nil && !dir && flags&syscall.O_EXCL != 0 {
		var ok bool
		if ok, err = d.exists(cctx, k); ok {
			cancel()
			return nil, nil, 0, syscall.EEXIST
		}
	}
	cancel()
	switch {
	case err != nil:
		return nil, nil, 0, errno(err)
	case dir:
		return nil, nil, 0, syscall.EISDIR
	}
	f := &fileNode{m: d.m}
	h, err := f.newWriter(ctx, k, flags|syscall.O_TRUNC)
	if err != nil {
		return nil, nil, 0, errno(err)
	}
	h.dirty = true // an empty new file is still a file
	d.m.fileAttr(&out.Attr, 0, h.mod)
	out.SetAttrTimeout(0)
	return d.NewInode(ctx, f, fs.StableAttr{Mode: syscall.S_IFREG}), h, 0, 0
}

// Unlink deletes a file. An open file stays readable and writable
// through its handles, and is not written back when they close.
func (d *dirNode) Unlink(ctx context.Context, name string) syscall.Errno {
	ctx, cancel := d.m.ctx(ctx)
	defer cancel()
	var f *fileNode
	if ch := d.GetChild(name); ch != nil {
		f, _ = ch.Operations().(*fileNode)
	}
	err := d.m.files.Delete(ctx, join(d.key(), name), nil)
	if errors.Is(err, client.ErrNotFound) && f != nil && f.hasWriter() {
		err = nil // created here and not closed yet: not in the cluster
	}
	if err == nil && f != nil {
		f.unlink()
	}
	return errno(err)
}

// Rmdir removes an empty folder (its marker, if any).
func (d *dirNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	ctx, cancel := d.m.ctx(ctx)
	defer cancel()
	k := join(d.key(), name)
	page, err := d.m.files.List(ctx, client.ListOptions{Prefix: k + "/", Limit: len(markers) + 1, Consistent: true})
	if err != nil {
		return errno(err)
	}
	switch {
	case len(page.Files) == 0:
		return syscall.ENOENT
	case !onlyMarkers(k, page.Files):
		return syscall.ENOTEMPTY
	}
	for _, f := range page.Files {
		if err := d.m.files.Delete(ctx, f.Path, nil); err != nil && !errors.Is(err, client.ErrNotFound) {
			return errno(err)
		}
	}
	return 0
}

// Rename moves a file with the cluster's rename (a copy, then a delete of
// the copied version: not atomic), a folder key by key.
func (d *dirNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	const renameNoReplace, renameExchange = 1, 2
	if flags&renameExchange != 0 {
		return syscall.EINVAL
	}
	if hidden[newName] {
		return syscall.EACCES
	}
	ctx, cancel := d.m.ctx(ctx)
	defer cancel()
	from := join(d.key(), name)
	to := join(newParent.EmbeddedInode().Path(nil), newName)
	if e := checkName(newName, to, false); e != 0 {
		return e
	}
	if flags&renameNoReplace != 0 {
		if ok, err := d.exists(ctx, to); err != nil || ok {
			if err != nil {
				return errno(err)
			}
			return syscall.EEXIST
		}
	}
	dir, err := d.m.isDir(ctx, from, true)
	if err != nil {
		return errno(err)
	}
	if !dir {
		_, err := d.m.files.Copy(ctx, from, to, &client.CopyOptions{Move: true})
		return errno(err)
	}
	if strings.HasPrefix(to+"/", from+"/") {
		return syscall.EINVAL
	}
	if busy, err := d.m.isDir(ctx, to, true); err != nil || busy {
		if err != nil {
			return errno(err)
		}
		if keys, err := d.m.below(ctx, to); err != nil || !onlyMarkers(to, keys) {
			return syscall.ENOTEMPTY
		}
	}
	keys, err := d.m.below(ctx, from)
	if err != nil {
		return errno(err)
	}
	for _, k := range keys {
		if _, err := d.m.files.Copy(ctx, k.Path, to+strings.TrimPrefix(k.Path, from), &client.CopyOptions{Move: true}); err != nil {
			return errno(err)
		}
	}
	return 0
}
