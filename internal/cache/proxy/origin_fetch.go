package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/internal/cache"
)

// errBodyTimeout: the origin sent nothing for BodyTimeout mid-body.
var errBodyTimeout = errors.New("the origin's body stalled")

// newTransport is the client to origins: no proxy from the environment,
// no transparent decompression (the cache stores what the origin sent),
// bounded header size and wait.
func newTransport(l Limits) *http.Transport {
	return &http.Transport{
		DialContext:            (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		DisableCompression:     true,
		MaxResponseHeaderBytes: l.MaxHeaderBytes,
		ResponseHeaderTimeout:  l.HeaderTimeout,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
	}
}

// newFreshTransport is the transport for a second try after a reused
// connection failed: it never reuses one.
func newFreshTransport(l Limits) *http.Transport {
	t := newTransport(l)
	t.DisableKeepAlives = true
	return t
}

// retryable tells whether a failed exchange on a reused connection may
// be sent again on a new one: not when the request was cancelled or the
// origin was too slow (a second try would only wait again).
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var ne net.Error
	return !errors.As(err, &ne) || !ne.Timeout()
}

// exchange is one request to an origin and its response.
type exchange struct {
	resp              *http.Response
	reqTime, respTime time.Time
	cancel            context.CancelFunc
}

// close drops the rest of the body and the request's context.
func (x *exchange) close() {
	x.resp.Body.Close()
	x.cancel()
}

// roundTrip sends r (its method, or method when set) to the origin.
// strip drops the client's own validators; extra adds or replaces fields
// (the cache's validators). The body's reads are bounded by BodyTimeout.
func (h *Handler) roundTrip(ctx context.Context, r *http.Request, o *Origin, method string, body io.Reader, strip bool, extra cache.Header) (*exchange, error) {
	if method == "" {
		method = r.Method
	}
	ctx, cancel := context.WithCancel(ctx)
	out, err := http.NewRequestWithContext(ctx, method, o.URL.String()+r.URL.RequestURI(), body)
	if err != nil {
		cancel()
		return nil, err
	}
	out.Header = r.Header.Clone()
	for _, f := range cache.HopByHop(r.Header) {
		out.Header.Del(f)
	}
	if strip {
		for _, f := range []string{"If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"} {
			out.Header.Del(f)
		}
	}
	for k, v := range extra {
		out.Header[k] = v
	}
	out.Header.Add("Via", "1.1 mure")
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		out.Header.Add("X-Forwarded-For", ip)
	}
	out.Header.Set("X-Forwarded-Host", r.Host)
	if body != nil {
		out.ContentLength = r.ContentLength
	}
	h.metrics.originFetch()
	x := &exchange{reqTime: h.now(), cancel: cancel}
	var reused bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	resp, err := h.transport.RoundTrip(out.WithContext(httptrace.WithClientTrace(ctx, trace)))
	if err != nil && reused && body == nil && retryable(ctx, err) {
		// A kept-alive connection can hold what a broken origin sent
		// past the end of its last answer (a Content-Length shorter than
		// the body): the next answer read on it is garbage. Like
		// Varnish, try once more on a new connection.
		resp, err = h.fresh.RoundTrip(out)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	x.respTime = h.now()
	resp.Body = newIdleBody(resp.Body, h.limits.BodyTimeout, cancel)
	x.resp = resp
	return x, nil
}

// idleBody cancels the origin request when one read waits longer than
// its timeout (a stalled origin), and reports errBodyTimeout.
type idleBody struct {
	rc    io.ReadCloser
	d     time.Duration
	timer *time.Timer
	fired atomic.Bool
}

func newIdleBody(rc io.ReadCloser, d time.Duration, cancel context.CancelFunc) *idleBody {
	b := &idleBody{rc: rc, d: d}
	b.timer = time.AfterFunc(time.Hour, func() {
		b.fired.Store(true)
		cancel()
	})
	b.timer.Stop()
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.timer.Reset(b.d)
	n, err := b.rc.Read(p)
	b.timer.Stop()
	if err != nil && err != io.EOF && b.fired.Load() {
		err = errBodyTimeout
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	return b.rc.Close()
}

// readWhole reads a body of at most max bytes; tooBig is true (with the
// first max+1 bytes) when it is longer. A body cut short is an error.
func readWhole(body io.Reader, max int64) (b []byte, tooBig bool, err error) {
	b, err = io.ReadAll(io.LimitReader(body, max+1))
	if err != nil {
		return nil, false, err
	}
	return b, int64(len(b)) > max, nil
}

// copyHeader copies an origin's response header for the client, without
// its hop-by-hop fields.
func copyHeader(dst, src http.Header) {
	skip := map[string]bool{}
	for _, f := range cache.HopByHop(src) {
		skip[f] = true
	}
	for k, v := range src {
		if !skip[k] {
			dst[k] = v
		}
	}
}
