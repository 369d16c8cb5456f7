package webdav

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/files"
)

// fileInfo is a file's version as an os.FileInfo; it answers its ETag and
// content type itself (webdav.ETager, webdav.ContentTyper), so that a
// listing never opens the file.
type fileInfo struct{ files.Info }

func (i fileInfo) Name() string       { return path.Base(i.Path) }
func (i fileInfo) Size() int64        { return i.Info.Size }
func (i fileInfo) Mode() fs.FileMode  { return 0o644 }
func (i fileInfo) ModTime() time.Time { return i.Modified }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }

// ETag implements webdav.ETager: the file API's ETag (its version).
func (i fileInfo) ETag(context.Context) (string, error) { return i.Info.ETag, nil }

// ContentType implements webdav.ContentTyper: the type the writer gave,
// else by the name's extension.
func (i fileInfo) ContentType(context.Context) (string, error) {
	return contentType(i.Path, i.Attrs.ContentType), nil
}

func contentType(name, given string) string {
	if given != "" {
		return given
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// dirInfo is a folder ("" for the root). Folders have no time of their
// own; they answer the Unix epoch (clients show the zero time badly).
type dirInfo string

func (d dirInfo) Name() string {
	if d == "" {
		return "/"
	}
	return path.Base(string(d))
}
func (d dirInfo) Size() int64        { return 0 }
func (d dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o755 }
func (d dirInfo) ModTime() time.Time { return time.Unix(0, 0).UTC() }
func (d dirInfo) IsDir() bool        { return true }
func (d dirInfo) Sys() any           { return nil }

// errNotWritable is the answer to a write on a file opened for reading.
var errNotWritable = errors.New("webdav: file opened for reading")

// readFile reads one version of a file. It opens the version at the
// offset of the first Read and again after a Seek backwards (a forwarded
// read only goes forward); a reopening that finds another version fails
// rather than mix two versions.
type readFile struct {
	fs   *FS
	ctx  context.Context
	info files.Info
	rd   *files.Reader
	at   int64 // the offset rd reads next
	pos  int64
}

// Read implements io.Reader. A failure (not the end) also fails the
// request, so that a copy being made from this file does not commit.
func (r *readFile) Read(p []byte) (int, error) {
	n, err := r.read(p)
	requestOf(r.ctx).fail(err)
	return n, err
}

func (r *readFile) read(p []byte) (int, error) {
	if r.pos >= r.info.Size {
		return 0, io.EOF
	}
	if r.rd != nil && r.at != r.pos {
		if r.pos > r.at && r.pos-r.at < 64<<10 {
			n, err := io.CopyN(io.Discard, r.rd, r.pos-r.at)
			r.at += n
			if err != nil {
				return 0, err
			}
		} else {
			_ = r.rd.Close()
			r.rd = nil
		}
	}
	if r.rd == nil {
		rd, err := r.fs.files.Open(r.ctx, r.info.Path, files.OpenOptions{Forwarding: fwd, Offset: r.pos})
		if err != nil {
			return 0, err
		}
		if rd.Info().Version != r.info.Version {
			_ = rd.Close()
			return 0, fmt.Errorf("%w: %s changed while it was read (version %d, now %d)", files.ErrConflict, r.info.Path, r.info.Version, rd.Info().Version)
		}
		r.rd, r.at = rd, r.pos
	}
	n, err := r.rd.Read(p)
	r.at += int64(n)
	r.pos = r.at
	return n, err
}

func (r *readFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.info.Size
	}
	if offset < 0 {
		return r.pos, fmt.Errorf("seek to %d: negative offset", offset)
	}
	r.pos = offset
	return offset, nil
}

func (r *readFile) Close() error {
	if r.rd == nil {
		return nil
	}
	err := r.rd.Close()
	r.rd = nil
	return err
}

func (r *readFile) Stat() (fs.FileInfo, error)         { return fileInfo{r.info}, nil }
func (r *readFile) Readdir(int) ([]fs.FileInfo, error) { return nil, errNotDir(r.info.Path) }
func (r *readFile) Write([]byte) (int, error)          { return 0, errNotWritable }

func errNotDir(p string) error {
	return &os.PathError{Op: "readdir", Path: "/" + p, Err: errors.New("not a folder")}
}

// dirFile is an open folder: Readdir lists its children, folders winning
// over files of the same name, hidden names left out.
type dirFile struct {
	fs      *FS
	ctx     context.Context
	info    dirInfo
	entries []fs.FileInfo
	listed  bool
}

func (d *dirFile) Write([]byte) (int, error)      { return 0, errNotWritable }
func (d *dirFile) Read([]byte) (int, error)       { return 0, io.EOF }
func (d *dirFile) Seek(int64, int) (int64, error) { return 0, nil }
func (d *dirFile) Close() error                   { return nil }
func (d *dirFile) Stat() (fs.FileInfo, error)     { return d.info, nil }

// Readdir implements http.File.
func (d *dirFile) Readdir(count int) ([]fs.FileInfo, error) {
	if !d.listed {
		all, err := d.fs.children(d.ctx, string(d.info))
		if err != nil {
			return nil, err
		}
		d.entries, d.listed = all, true
	}
	if count <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n := min(count, len(d.entries))
	out := d.entries[:n]
	d.entries = d.entries[n:]
	return out, nil
}

// maxChildren bounds one folder's listing.
const maxChildren = 100000

// children lists the folder k: the caller sees the entries it may read
// (a folder when it may read anything below it).
func (f *FS) children(ctx context.Context, k string) ([]fs.FileInfo, error) {
	dirs := map[string]bool{}
	var out []fs.FileInfo
	var fileRows []files.Info
	after := ""
	for {
		page, err := f.files.List(ctx, files.ListOptions{Prefix: dirPrefix(k), Delimiter: "/", After: after, Limit: 1000, Consistent: after == ""})
		if err != nil {
			return nil, err
		}
		for _, p := range page.Prefixes {
			d := strings.TrimSuffix(p, "/")
			if !isHidden(d) && f.mayList(ctx, p) {
				dirs[d] = true
				out = append(out, dirInfo(d))
			}
		}
		for _, in := range page.Files {
			if !isHidden(in.Path) && f.allow(ctx, auth.Read, in.Path) == nil {
				fileRows = append(fileRows, in)
			}
		}
		if len(out)+len(fileRows) > maxChildren {
			return nil, fmt.Errorf("%w: the folder /%s has more than %d entries; list it with the native API", files.ErrBadRequest, k, maxChildren)
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	for _, in := range fileRows {
		if !dirs[in.Path] {
			out = append(out, fileInfo{in})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// mayList reports whether the caller may read something below prefix.
func (f *FS) mayList(ctx context.Context, prefix string) bool {
	return f.allow(ctx, auth.Read, prefix) == nil
}
