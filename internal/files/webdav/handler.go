package webdav

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"syscall"

	xdav "golang.org/x/net/webdav"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/auth/authhttp"
	"github.com/mure-dev/mure/internal/files"
)

// Handler answers WebDAV requests over the file API: x/net/webdav's
// protocol over FS, with the cluster's locks. Behind it, the node's guard
// has authenticated the caller (Classify says what each request needs).
type Handler struct {
	fs    *FS
	locks *Locks
	log   *slog.Logger
}

// NewHandler returns the WebDAV face over fs with the cluster's locks.
func NewHandler(fs *FS, locks *Locks, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{fs: fs, locks: locks, log: log}
}

// request is what the file system learns of the request it serves: the
// declared length of a PUT's body, and whether a body or a source failed
// midway (then the write being made must not become visible).
type request struct {
	method, path string
	length       int64
	contentType  string      // a PUT's, kept with the file
	header       http.Header // the answer's: a GET's stored content type goes here

	mu     sync.Mutex
	failed error
	err    error // the error x/net/webdav answered with
}

type reqKey struct{}

func requestOf(ctx context.Context) *request {
	q, _ := ctx.Value(reqKey{}).(*request)
	return q
}

func (q *request) fail(err error) {
	if q == nil || err == nil || errors.Is(err, io.EOF) {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failed == nil {
		q.failed = err
	}
}

func (q *request) failure() error {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failed
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := &request{method: r.Method, path: slashClean(r.URL.Path), length: r.ContentLength, header: w.Header()}
	if ct := r.Header.Get("Content-Type"); r.Method == http.MethodPut && files.CheckAttrs(files.Attrs{ContentType: ct}) == nil {
		q.contentType = ct
	}
	if r.Body != nil {
		r.Body = &watchedBody{ReadCloser: r.Body, q: q}
	}
	user := ""
	if p, ok := authhttp.PrincipalFrom(r.Context()); ok {
		user = p.Name()
	}
	dav := &xdav.Handler{FileSystem: h.fs, LockSystem: h.locks.forRequest(r.Method, user), Logger: func(_ *http.Request, err error) {
		q.mu.Lock()
		q.err = err
		q.mu.Unlock()
	}}
	fw := &fixWriter{ResponseWriter: w}
	w.Header().Set("Server", "mure")
	dav.ServeHTTP(fw, r.WithContext(context.WithValue(r.Context(), reqKey{}, q)))
	fw.finish(q.err)
	if q.err != nil {
		h.log.Debug("webdav request failed", "method", r.Method, "path", r.URL.Path, "status", fw.status, "err", q.err)
	}
}

// watchedBody records a request body that fails midway.
type watchedBody struct {
	io.ReadCloser
	q *request
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.q.fail(err)
	return n, err
}

// fixWriter holds back an error answer until the error behind it is
// known: x/net/webdav answers every failure of a PUT with 405 and most
// failures to open with 404, where the file API's error says better
// (507 no space, 503 no quorum, 403 not allowed, ...).
type fixWriter struct {
	http.ResponseWriter
	status int
	held   bool
	body   bytes.Buffer
}

func (f *fixWriter) WriteHeader(status int) {
	if f.status != 0 {
		return
	}
	f.status = status
	if status >= 400 {
		f.held = true
		return
	}
	f.ResponseWriter.WriteHeader(status)
}

func (f *fixWriter) Write(p []byte) (int, error) {
	if f.status == 0 {
		f.WriteHeader(http.StatusOK)
	}
	if f.held {
		return f.body.Write(p)
	}
	return f.ResponseWriter.Write(p)
}

// Flush lets streamed answers (a large multistatus) go out as they are made.
func (f *fixWriter) Flush() {
	if fl, ok := f.ResponseWriter.(http.Flusher); ok && !f.held {
		fl.Flush()
	}
}

func (f *fixWriter) finish(err error) {
	if !f.held {
		return
	}
	if status, code, ok := statusOf(err, f.status); ok {
		var un *files.UnavailableError
		if errors.As(err, &un) {
			api.Unavailable(f.ResponseWriter, max(int((un.RetryAfter+999_999_999)/1_000_000_000), 1), code, err.Error())
			return
		}
		api.Error(f.ResponseWriter, status, code, err.Error())
		return
	}
	f.ResponseWriter.WriteHeader(f.status)
	_, _ = f.ResponseWriter.Write(f.body.Bytes())
}

// statusOf maps an error of the file API or the file system to an answer
// better than the one x/net/webdav chose (was), if there is one.
func statusOf(err error, was int) (int, string, bool) {
	switch {
	case err == nil:
		return 0, "", false
	case errors.Is(err, files.ErrUnavailable), errors.Is(err, ErrNoQuorum):
		return http.StatusServiceUnavailable, api.CodeUnavailable, true
	case errors.Is(err, os.ErrPermission):
		return http.StatusForbidden, api.CodeForbidden, true
	case errors.Is(err, files.ErrNoSpace):
		return http.StatusInsufficientStorage, api.CodeNoSpace, true
	case errors.Is(err, files.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, api.CodeTooLarge, true
	case errors.Is(err, files.ErrBadPath):
		return http.StatusBadRequest, api.CodeBadPath, true
	case errors.Is(err, files.ErrTruncated):
		return http.StatusBadRequest, api.CodeTruncated, true
	case errors.Is(err, files.ErrConflict):
		return http.StatusConflict, api.CodeConflict, true
	case errors.Is(err, syscall.EISDIR):
		return http.StatusMethodNotAllowed, api.CodeMethod, true
	case was == http.StatusForbidden && errors.Is(err, os.ErrNotExist):
		// A MOVE or COPY whose destination's parent is missing.
		return http.StatusConflict, api.CodeConflict, true
	case was == http.StatusMethodNotAllowed && errors.Is(err, os.ErrNotExist):
		return http.StatusConflict, api.CodeConflict, true
	}
	return 0, "", false
}

// ErrNoQuorum: the locks could not reach the cluster's leader.
var ErrNoQuorum = errors.New("webdav: no quorum")

// Classify says what a WebDAV request needs of its caller, for the node's
// guard: reading methods read the path, the others write it. A folder's
// path is checked as its prefix ("photos/"), so that a grant on a folder
// opens the folder itself; the file system checks every key it touches
// (a COPY's or MOVE's destination, a listing's entries) again.
func Classify(r *http.Request) authhttp.Need {
	k := key(r.URL.Path)
	if k != "" {
		k += "/"
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, "PROPFIND", "COPY":
		return authhttp.Need{Action: auth.Read, Path: k}
	}
	return authhttp.Need{Action: auth.Write, Path: k}
}
