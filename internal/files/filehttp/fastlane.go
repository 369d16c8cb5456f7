package filehttp

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mure-dev/mure/internal/files"
	"github.com/mure-dev/mure/internal/service"
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
	s        *files.Service
	main     string // the node's main client address, host:port
	allow    func(authorization, key string) bool
	srv      *fasthttp.Server
	nodeHdr  []byte
	location []byte            // "http://" + main
	bare     service.BareConns // fasthttp's writev wants the TCP connection itself
}

// NewFastLane returns the fast read lane of s; main is the node's main
// client API address (where everything but a local whole-file read goes),
// allow says whether a request's Authorization header may read a key (nil:
// every request may; a refused one goes to the main port, which explains
// the 401 or 403), maxConc the requests served at once.
func NewFastLane(s *files.Service, main string, allow func(authorization, key string) bool, maxConc int) *FastLane {
	loc := main
	if !strings.Contains(main, "://") {
		loc = "http://" + main
	}
	l := &FastLane{s: s, main: main, allow: allow, nodeHdr: []byte(s.NodeID()), location: []byte(loc)}
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
	l.srv.ConnState = l.bare.ConnState
	return l
}

// Serve answers on ln until Shutdown.
func (l *FastLane) Serve(ln net.Listener) error { return l.srv.Serve(l.bare.Listener(ln)) }

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
	h := &ctx.Request.Header
	for _, k := range condHeaders {
		if len(h.Peek(k)) > 0 {
			l.toMain(ctx)
			return
		}
	}
	p, err := url.PathUnescape(string(raw[len(FilesPrefix):]))
	if err != nil || files.ValidatePath(p) != nil {
		l.toMain(ctx)
		return
	}
	if l.allow != nil && !l.allow(string(h.Peek("Authorization")), p) {
		l.toMain(ctx) // the main port explains the 401 or 403
		return
	}
	stale := false
	if args := ctx.QueryArgs(); args.Len() > 0 {
		v := args.Peek("stale")
		stale = string(v) == "1" || string(v) == "true"
	}
	// Open serves only what this node may serve itself (no forwarding):
	// anything else, the main port sorts out (and counts, hence Probe).
	rd, err := l.s.Open(ctx, p, files.OpenOptions{Stale: stale, Probe: true})
	if err != nil {
		l.toMain(ctx)
		return
	}
	l.s.ReadAnswered(p)
	l.serve(ctx, rd, get)
	if rd.Holding() {
		rd.ReadBy(fastClientID(ctx))
	}
}

// serve answers with the content of rd, and closes it.
func (l *FastLane) serve(ctx *fasthttp.RequestCtx, rd *files.Reader, get bool) {
	info := rd.Info()
	rh := &ctx.Response.Header
	rh.Set("Etag", info.ETag)
	rh.Set("X-Mure-Version", strconv.FormatUint(info.Version, 10))
	rh.Set("X-Mure-Sha256", info.SHA256)
	rh.Set("Content-Type", contentType(&info))
	for k, v := range info.Headers { // as setAttrHeaders: an empty one is not sent
		if v != "" {
			rh.Set(k, v)
		}
	}
	rh.Set("Accept-Ranges", "bytes")
	rh.Set("Last-Modified", info.Modified.Format(http.TimeFormat))
	if !get {
		rh.SetContentLength(int(rd.Length()))
		rd.Close()
		return
	}
	l.s.Metrics().Sent(info.Size)
	if data := rd.Bytes(); data != nil {
		ctx.Response.SetBodyRaw(data) // cached, verified, never modified
		rd.Close()
		return
	}
	// A verified file: fasthttp copies it with sendfile, then closes it. A
	// copy not yet verified is read through the reader, which fails at the
	// end on a checksum mismatch (and reports the replica lost): fasthttp
	// then closes the connection mid-body.
	if file := rd.File(); file != nil {
		ctx.Response.SetBodyStream(file, int(rd.Length()))
	} else {
		ctx.Response.SetBodyStream(rd, int(rd.Length()))
	}
}

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
