package proxy

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/mure-dev/mure/internal/cache"
	"github.com/mure-dev/mure/internal/cache/tier"
	"github.com/mure-dev/mure/internal/service"
)

// The fast lane (--proxy-fast): a second listener of the same proxy on
// valyala/fasthttp, which writes a response's header and body in one
// system call where net/http makes two for a 4 KiB hit. It answers plain
// hits itself — a GET or HEAD without conditions, range or directives,
// whose object is fresh, has no Vary and no Set-Cookie, and is addressed
// by a plain path — and hands every other request to the proxy's net/http
// handler through fasthttpadaptor (streaming included), so that the
// answers are the same on both listeners (decision 0043 has the why).

// fastLane is the proxy's fasthttp server.
type fastLane struct {
	h    *Handler
	srv  *fasthttp.Server
	rest fasthttp.RequestHandler
	done chan struct{}
	base context.Context // the requests' context, cancelled by shutdown
	stop context.CancelFunc
	hits atomic.Int64      // answered by the fast path itself
	bare service.BareConns // fasthttp's writev wants the TCP connection itself
}

func newFastLane(h *Handler) *fastLane {
	l := &fastLane{h: h, done: make(chan struct{})}
	l.base, l.stop = context.WithCancel(context.Background())
	// fasthttpadaptor gives the handler the fasthttp request as its
	// context, which is reused once the handler returns: the transport's
	// dials that outlive a request would read it. Each request gets a
	// context of its own instead.
	l.rest = fasthttpadaptor.NewFastHTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(l.base)
		defer cancel()
		h.ServeHTTP(w, owned(r.WithContext(ctx)))
	}))
	l.srv = &fasthttp.Server{
		Handler:               l.handle,
		ReadTimeout:           time.Minute,
		IdleTimeout:           2 * time.Minute,
		ReadBufferSize:        64 << 10, // a request header up to the proxy's 64 KiB
		MaxRequestBodySize:    16 << 20, // fasthttpadaptor reads a body whole: larger ones, use --proxy
		NoDefaultContentType:  true,
		NoDefaultServerHeader: true,
		CloseOnShutdown:       true,
		ConnState:             l.bare.ConnState,
	}
	return l
}

// start serves ln in a goroutine that shutdown waits for.
func (l *fastLane) start(ln net.Listener, log *slog.Logger) {
	go func() {
		defer close(l.done)
		if err := l.srv.Serve(l.bare.Listener(ln)); err != nil {
			log.Error("proxy fast lane stopped", "err", err)
		}
	}()
}

func (l *fastLane) shutdown(ctx context.Context) error {
	defer l.stop()
	err := l.srv.ShutdownWithContext(ctx)
	<-l.done
	return err
}

// fastBlockers are request fields that take a request off the fast path:
// conditions, ranges, directives, upgrades.
var fastBlockers = []string{"Range", "If-Range", "If-None-Match", "If-Modified-Since", "If-Match",
	"If-Unmodified-Since", "Cache-Control", "Pragma", "Upgrade"}

func (l *fastLane) handle(ctx *fasthttp.RequestCtx) {
	if !l.hit(ctx) {
		l.rest(ctx)
	}
}

// hit answers a plain hit and reports whether it did; false leaves the
// response untouched.
func (l *fastLane) hit(ctx *fasthttp.RequestCtx) bool {
	h := l.h
	head := ctx.IsHead()
	if !ctx.IsGet() && !head {
		return false
	}
	uri := ctx.Request.Header.RequestURI()
	if len(uri) == 0 || uri[0] != '/' || bytes.IndexByte(uri, '%') >= 0 || bytes.Contains(uri, []byte("/.")) {
		return false // not a plain path: net/http's reading of it decides
	}
	for _, f := range fastBlockers {
		if len(ctx.Request.Header.Peek(f)) > 0 {
			return false
		}
	}
	path := uri
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		path = uri[:i]
	}
	o := h.router.route(string(ctx.Host()), string(path))
	if o == nil {
		return false
	}
	meta, _ := h.lookup(o.name()+" "+string(uri), nil)
	if meta == nil || len(meta.Vary) > 0 || meta.Header["Set-Cookie"] != nil || h.purges.unpurged(meta) {
		return false
	}
	now := h.now()
	d := h.policy.Decide(nil, meta.Stored(), now)
	if d.Action != cache.Serve {
		return false
	}
	obj, err := h.tiers.TryGet(meta) // refused, the handler asks again and counts it
	if err != nil {
		return false
	}
	h.metrics.result(resultHit)
	l.hits.Add(1)
	writeFast(ctx, obj, d.Age, cache.Status{Hit: true, TTL: d.TTL(), HasTTL: true})
	if !head {
		h.metrics.served("cache", int64(len(obj.Body)))
		h.metrics.servedTier(obj.FromDisk, int64(len(obj.Body)))
	}
	return true
}

// writeFast writes a stored object as writeStored does for a plain
// request: its header, Age (its age now, as the decision found it),
// Cache-Status and the body.
func writeFast(ctx *fasthttp.RequestCtx, obj *tier.Object, age time.Duration, st cache.Status) {
	rh := &ctx.Response.Header
	rh.DisableNormalizing() // the names as the origin sent them (net/http canonicalised them)
	for k, vs := range obj.Header {
		if k == "Content-Length" || k == "Age" || k == "Cache-Status" {
			continue
		}
		for _, v := range vs {
			rh.Add(k, v)
		}
	}
	rh.Set("Age", cache.AgeHeader(age))
	rh.Set("Cache-Status", st.String(cacheName))
	ctx.SetStatusCode(obj.Status)
	ctx.Response.SetBodyRaw(obj.Body)  // never modified: the tier's bodies are immutable
	rh.SetContentLength(len(obj.Body)) // fasthttp leaves it out where a status has no body
}

// owned gives r strings of its own. fasthttpadaptor's request points into
// the fasthttp request's buffers (its method, host, URI, header names and
// values), which fasthttp reuses once the handler returns, while the proxy
// keeps some of them longer: a Vary-selected request header is part of an
// object's key, which the disk tier's writer reads after the answer (a
// data race, and an object stored under another request's bytes).
func owned(r *http.Request) *http.Request {
	r.Method = strings.Clone(r.Method)
	r.Proto = strings.Clone(r.Proto)
	r.Host = strings.Clone(r.Host)
	r.RequestURI = strings.Clone(r.RequestURI)
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
		r.URL = u
	}
	h := make(http.Header, len(r.Header))
	for k, vs := range r.Header {
		c := make([]string, len(vs))
		for i, v := range vs {
			c[i] = strings.Clone(v)
		}
		h[strings.Clone(k)] = c
	}
	r.Header = h
	for i, v := range r.TransferEncoding {
		r.TransferEncoding[i] = strings.Clone(v)
	}
	return r
}
