package webdav

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/files"
)

// writeFile streams what is written into one Put, started at open: the
// new version becomes visible at Close, whole or not at all (a request
// that ends early cancels the Put and nothing changes).
type writeFile struct {
	ctx  context.Context
	fs   Files
	path string
	pw   *io.PipeWriter
	done chan struct{}
	q    *request // the request writing; its body or source may fail

	mu      sync.Mutex
	n       int64
	info    files.Info
	err     error
	attrs   files.Attrs // the version's, patched by a COPY's properties
	patched bool
}

func startWrite(ctx context.Context, fs Files, k string, size int64, cond files.Cond, attrs files.Attrs, q *request) *writeFile {
	pr, pw := io.Pipe()
	w := &writeFile{ctx: ctx, fs: fs, path: k, pw: pw, done: make(chan struct{}), q: q, attrs: attrs}
	go func() {
		defer close(w.done)
		info, err := fs.Put(ctx, k, pr, files.PutOptions{Forwarding: fwd, Size: size, Cond: cond, Attrs: attrs})
		pr.CloseWithError(errAbandoned) // a Put that stopped early unblocks Write
		w.mu.Lock()
		w.info, w.err = info, err
		w.mu.Unlock()
	}()
	return w
}

// errAbandoned ends the writes of a file whose Put has returned.
var errAbandoned = errors.New("webdav: the write ended")

func (w *writeFile) Write(p []byte) (int, error) {
	n, err := w.pw.Write(p)
	w.mu.Lock()
	w.n += int64(n)
	w.mu.Unlock()
	if err != nil {
		<-w.done
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.err != nil {
			return n, w.err
		}
		return n, err
	}
	return n, nil
}

// Close ends the body and waits for the Put's answer. When the request's
// body or the source of a copy failed midway, the Put fails instead.
func (w *writeFile) Close() error {
	if err := w.q.failure(); err != nil {
		_ = w.pw.CloseWithError(err)
	} else {
		_ = w.pw.Close()
	}
	<-w.done
	w.mu.Lock()
	err, patched := w.err, w.patched
	w.mu.Unlock()
	if err == nil && patched {
		err = w.setProps(w.ctx, w.fs)
	}
	return err
}

// Stat answers the bytes written so far; its ETag, asked for after
// Close, is the new version's.
func (w *writeFile) Stat() (fs.FileInfo, error) { return &writingInfo{f: w}, nil }

func (w *writeFile) Read([]byte) (int, error) {
	return 0, errors.New("webdav: file opened for writing")
}

func (w *writeFile) Seek(int64, int) (int64, error) {
	return 0, errors.New("webdav: a file being written cannot seek")
}

func (w *writeFile) Readdir(int) ([]fs.FileInfo, error) { return nil, errNotDir(w.path) }

// writingInfo describes a file being written.
type writingInfo struct{ f *writeFile }

func (i *writingInfo) Name() string      { return path.Base(i.f.path) }
func (i *writingInfo) Mode() fs.FileMode { return 0o644 }
func (i *writingInfo) IsDir() bool       { return false }
func (i *writingInfo) Sys() any          { return nil }

func (i *writingInfo) Size() int64 {
	i.f.mu.Lock()
	defer i.f.mu.Unlock()
	if i.f.info.Version != 0 {
		return i.f.info.Size
	}
	return i.f.n
}

func (i *writingInfo) ModTime() time.Time {
	i.f.mu.Lock()
	defer i.f.mu.Unlock()
	if i.f.info.Version != 0 {
		return i.f.info.Modified
	}
	return time.Now()
}

// ETag implements webdav.ETager: the written version's once closed.
func (i *writingInfo) ETag(context.Context) (string, error) {
	i.f.mu.Lock()
	defer i.f.mu.Unlock()
	if i.f.info.Version == 0 {
		return "", errors.New("webdav: the file is still being written")
	}
	return i.f.info.ETag, nil
}

// ContentType implements webdav.ContentTyper.
func (i *writingInfo) ContentType(context.Context) (string, error) {
	i.f.mu.Lock()
	defer i.f.mu.Unlock()
	return contentType(i.f.path, i.f.attrs.ContentType), nil
}
