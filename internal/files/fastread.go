package files

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
)

// The fast read lane: a second listener that answers GET and HEAD of files
// with valyala/fasthttp, for the cases that matter to throughput: a whole
// file this node may serve from its own copy (small ones from memory,
// large ones by sendfile). Everything else it redirects (307) to the same
// request on the node's main port, which runs the complete protocol:
// redirects to other nodes, 404s, ranges, conditional requests, errors.
// Writes never come here, so fasthttp's eager "100 Continue" cannot break
// redirect-before-body. See docs/decisions/0004-http-stack.md.

// FastLane is the fasthttp server of a node's fast read lane.
type FastLane struct {
	s        *Service
	main     string // the node's main client address, host:port
	token    []byte
	srv      *fasthttp.Server
	nodeHdr  []byte
	location []byte // "http://" + main
}

// NewFastLane returns the fast read lane of s; main is the node's main
// client API address (where everything but a local whole-file read goes),
// token the API token ("" for none), maxConc the requests served at once.
func NewFastLane(s *Service, main, token string, maxConc int) *FastLane {
	l := &FastLane{s: s, main: main, nodeHdr: []byte(s.self), location: []byte("http://" + main)}
	if token != "" {
		l.token = []byte("Bearer " + token)
	}
	l.srv = &fasthttp.Server{
		Handler:              l.handle,
		Name:                 "mure",
		Concurrency:          maxConc,
		ReadTimeout:          time.Minute,
		IdleTimeout:          2 * time.Minute,
		MaxRequestBodySize:   1 << 10, // reads only: no bodies
		NoDefaultContentType: true,
		CloseOnShutdown:      true,
	}
	return l
}

// Serve answers on ln until Shutdown.
func (l *FastLane) Serve(ln net.Listener) error { return l.srv.Serve(ln) }

// Shutdown stops the lane, waiting for requests in flight until ctx ends.
func (l *FastLane) Shutdown(ctx context.Context) error { return l.srv.ShutdownWithContext(ctx) }

func (l *FastLane) handle(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.SetBytesV("X-Mure-Node", l.nodeHdr)
	m := ctx.Method()
	get, head := string(m) == http.MethodGet, string(m) == http.MethodHead
	// The raw request target, not fasthttp's normalised path: "a//b" or
	// "a/./b" are other keys (refused by ValidatePath), not "a/b".
	raw := ctx.Request.Header.RequestURI()
	if i := bytes.IndexByte(raw, '?'); i >= 0 {
		raw = raw[:i]
	}
	if (!get && !head) || !bytes.HasPrefix(raw, []byte(FilesPrefix)) {
		l.toMain(ctx)
		return
	}
	if l.token != nil && subtle.ConstantTimeCompare(ctx.Request.Header.Peek("Authorization"), l.token) != 1 {
		l.toMain(ctx) // the main port explains the 401
		return
	}
	h := &ctx.Request.Header
	if len(h.Peek("Range")) > 0 || len(h.Peek("If-None-Match")) > 0 || len(h.Peek("If-Match")) > 0 ||
		len(h.Peek("If-Modified-Since")) > 0 || len(h.Peek("If-Unmodified-Since")) > 0 || len(h.Peek("If-Range")) > 0 {
		l.toMain(ctx)
		return
	}
	p, err := url.PathUnescape(string(raw[len(FilesPrefix):]))
	if err != nil || ValidatePath(p) != nil {
		l.toMain(ctx)
		return
	}
	stale := false
	if args := ctx.QueryArgs(); args.Len() > 0 {
		v := args.Peek("stale")
		stale = string(v) == "1" || string(v) == "true"
	}
	j := l.s.judgeRead(ctx, p)
	f := j.f
	if !j.mayServe(l.s, stale) || !l.serve(ctx, f, get) {
		l.toMain(ctx)
		return
	}
	if f.Holder == l.s.self {
		l.s.resumer.read(p, f.Grant, fastClientID(ctx))
	}
}

// serve answers with the local copy of f; false when it is missing or
// corrupt (the main port then sorts it out).
func (l *FastLane) serve(ctx *fasthttp.RequestCtx, f *meta.File, get bool) bool {
	b, err := l.s.st.Open(f.Path, f.BlobID)
	if err != nil {
		if errors.Is(err, store.ErrChecksum) {
			l.s.lost(f, err)
		}
		return false
	}
	rh := &ctx.Response.Header
	rh.Set("Etag", f.ETag())
	rh.Set("X-Mure-Version", strconv.FormatUint(f.Version, 10))
	rh.Set("X-Mure-Sha256", f.Sum)
	rh.Set("Content-Type", "application/octet-stream")
	rh.Set("Accept-Ranges", "bytes")
	rh.Set("Last-Modified", f.Modified.Time().Format(http.TimeFormat))
	l.s.metrics.localReads.Inc()
	if !get {
		rh.SetContentLength(int(b.Size()))
		b.Close()
		return true
	}
	l.s.metrics.bytesOut.Add(float64(f.Size))
	if data := b.Bytes(); data != nil {
		ctx.Response.SetBodyRaw(data) // cached, verified, never modified
		b.Close()
		return true
	}
	// A verified file: fasthttp copies it with sendfile, then closes it. A
	// copy not yet verified is read through the blob, which fails at the
	// end on a checksum mismatch: fasthttp then closes the connection
	// mid-body, and the replica is reported lost.
	if file := b.File(); file != nil {
		ctx.Response.SetBodyStream(file, int(b.Size()))
	} else {
		ctx.Response.SetBodyStream(&checkedBody{b: b, lost: func(err error) { l.s.lost(f, err) }}, int(b.Size()))
	}
	return true
}

// checkedBody reads a blob that is checked as it is read and reports a
// failed check.
type checkedBody struct {
	b    *store.Blob
	lost func(error)
}

func (c *checkedBody) Read(p []byte) (int, error) {
	n, err := c.b.Read(p)
	if err != nil && errors.Is(err, store.ErrChecksum) {
		c.lost(err)
	}
	return n, err
}

func (c *checkedBody) Close() error { return c.b.Close() }

// toMain redirects the request, unchanged, to the node's main port.
func (l *FastLane) toMain(ctx *fasthttp.RequestCtx) {
	u := make([]byte, 0, len(l.location)+64)
	u = append(u, l.location...)
	u = append(u, ctx.Request.Header.RequestURI()...)
	ctx.Response.Header.SetBytesV("Location", u)
	ctx.SetStatusCode(http.StatusTemporaryRedirect)
}

func fastClientID(ctx *fasthttp.RequestCtx) string {
	if c := ctx.Request.Header.Peek("X-Mure-Client"); len(c) > 0 {
		return string(c)
	}
	return ctx.RemoteIP().String()
}

// OpenConnections returns the connections the fast lane holds open.
func (l *FastLane) OpenConnections() int { return int(l.srv.GetOpenConnectionsCount()) }
