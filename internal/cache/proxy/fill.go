package proxy

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/mure-dev/mure/internal/cache"
	"github.com/mure-dev/mure/internal/cache/tier"
)

// fetch gets a GET from the origin (without the client's validators, so
// that a whole response can be stored) and answers the client: from the
// stored object when it was stored, else passing the response through.
// It reports whether the object was stored.
func (h *Handler) fetch(w http.ResponseWriter, r *http.Request, o *Origin, key string, st cache.Status) bool {
	x, err := h.roundTrip(r.Context(), r, o, http.MethodGet, nil, true, nil)
	if err != nil {
		h.originError(w, err)
		return false
	}
	defer x.close()
	return h.answer(w, r, key, x, st)
}

// answer stores a response when RFC 9111 allows it and it fits, and
// answers the client: a GET's body is streamed to it as it arrives
// (streamFill); a HEAD, a range or a 304 for the client's own condition
// is answered once the body is whole. An origin that dies mid-body leaves
// nothing cached, and the client never gets a truncated copy presented as
// whole (a 502, or its response aborted).
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, key string, x *exchange, st cache.Status) bool {
	st.FwdStatus = x.resp.StatusCode
	ok, why := h.policy.Storable(http.MethodGet, cache.Header(r.Header), x.resp.StatusCode, cache.Header(x.resp.Header))
	if !ok {
		st.Detail = why
		h.stream(w, r, x, nil, st)
		return false
	}
	if x.resp.ContentLength > h.limits.MaxObject {
		// Declared too large: streamed at once, neither buffered nor
		// holding the fill budget while it passes.
		st.Detail = "too-large"
		h.stream(w, r, x, nil, st)
		return false
	}
	want, ok := h.reserve(x)
	if !ok {
		st.Detail = "fill-budget"
		h.stream(w, r, x, nil, st)
		return false
	}
	defer h.fills.give(want)
	if r.Method == http.MethodGet && r.Header.Get("Range") == "" &&
		!(x.resp.StatusCode == http.StatusOK && cache.NotModified(cache.Header(r.Header), cache.Header(x.resp.Header))) {
		return h.streamFill(w, r, key, x, st)
	}
	body, tooBig, err := readWhole(x.resp.Body, h.limits.MaxObject)
	if err != nil {
		h.originError(w, err)
		return false
	}
	if tooBig {
		st.Detail = "too-large"
		h.stream(w, r, x, body, st)
		return false
	}
	obj := h.object(key, r, x, body)
	if err := h.tiers.Put(obj); err != nil {
		h.log.Warn("cache: could not store an object", "key", key, "err", err)
		st.Detail = "store-failed"
		h.stream(w, r, x, body, st)
		return false
	}
	st.Stored = true
	h.writeStored(w, r, obj, st)
	return true
}

// fillBuffers are the chunks a streamed fill reads the origin's body in.
var fillBuffers = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// streamFill sends a storable response to the client as it arrives and
// keeps a copy; once the body is whole, and within the object limit, it
// is stored (Cache-Status says stored from the start: a body without a
// declared length that outgrows the limit is sent whole but not stored).
// A body cut short aborts the client's response and nothing is stored; a
// client gone mid-body ends the fill without storing.
func (h *Handler) streamFill(w http.ResponseWriter, r *http.Request, key string, x *exchange, st cache.Status) bool {
	obj := h.object(key, r, x, nil)
	hdr := w.Header()
	for k, v := range obj.Header {
		hdr[k] = v
	}
	hdr.Set("Age", cache.AgeHeader(obj.Stored().Age(h.now())))
	st.Stored = true
	hdr.Set("Cache-Status", st.String(cacheName))
	hdr.Del("Content-Length")
	var body []byte
	if n := x.resp.ContentLength; n >= 0 {
		hdr.Set("Content-Length", strconv.FormatInt(n, 10))
		body = make([]byte, 0, n)
	}
	w.WriteHeader(x.resp.StatusCode)
	buf := fillBuffers.Get().(*[32 << 10]byte)
	defer fillBuffers.Put(buf)
	var sent int64
	defer func() { h.metrics.served("origin", sent) }()
	tooBig, stored := false, false
	store := func() {
		obj.Body = body
		if err := h.tiers.Put(obj); err != nil {
			h.log.Warn("cache: could not store an object", "key", key, "err", err)
			return
		}
		stored = true
	}
	flusher, _ := w.(http.Flusher)
	for {
		n, err := x.resp.Body.Read(buf[:])
		if n > 0 {
			if !tooBig && int64(len(body)+n) > h.limits.MaxObject {
				tooBig, body = true, nil
			} else if !tooBig {
				body = append(body, buf[:n]...)
				if int64(len(body)) == x.resp.ContentLength {
					// Whole: stored before the last bytes go out, so that
					// a client holding the whole body finds it stored.
					store()
				}
			}
			m, werr := w.Write(buf[:n])
			sent += int64(m)
			if werr == nil && flusher != nil && (tooBig || int64(len(body)) != x.resp.ContentLength) {
				flusher.Flush() // more to come: what arrived goes out now, not when 4 KiB have
			}
			if werr != nil {
				return stored // the client is gone
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			h.log.Debug("cache: the origin's body ended early; the client's response is aborted", "key", key, "err", err)
			h.metrics.result(resultError)
			panic(http.ErrAbortHandler)
		}
	}
	if !tooBig && !stored { // no declared length, or an empty body
		store()
	}
	return stored
}

// reserve takes from the fill budget the memory to read x's body whole:
// its declared length, else the object limit. False: the budget is spent.
func (h *Handler) reserve(x *exchange) (int64, bool) {
	want := h.limits.MaxObject
	if n := x.resp.ContentLength; n >= 0 && n < want {
		want = n
	}
	return want, h.fills.take(want, h.limits.FillMemory)
}

// object builds the object to store from a complete response.
func (h *Handler) object(key string, r *http.Request, x *exchange, body []byte) *tier.Object {
	fields, _ := cache.VaryFields(cache.Header(x.resp.Header))
	return &tier.Object{Meta: tier.Meta{
		Key: key, Vary: fields, Selected: cache.Select(fields, cache.Header(r.Header)),
		Status: x.resp.StatusCode, Header: h.policy.StoredHeader(cache.Header(x.resp.Header)),
		RequestTime: x.reqTime, ResponseTime: x.respTime,
	}, Body: body}
}

// stream passes a response through: the header, what was already read
// (head), then the rest. A body cut short aborts the client's response so
// that it cannot be taken for a whole one.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, x *exchange, head []byte, st cache.Status) {
	copyHeader(w.Header(), x.resp.Header)
	w.Header().Set("Cache-Status", st.String(cacheName))
	w.WriteHeader(x.resp.StatusCode)
	if r.Method == http.MethodHead {
		return
	}
	if n := x.resp.ContentLength; n < 0 || n > 1<<20 {
		flush(w) // a large body goes out as it comes, on the fast lane too
	}
	n, _ := w.Write(head)
	m, err := io.Copy(w, x.resp.Body)
	h.metrics.served("origin", int64(n)+m)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
}

// flush sends what was written so far. On the fast lane it also turns
// fasthttpadaptor's buffering into streaming.
func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// pass forwards a GET or HEAD that the cache does not answer (a range,
// an upgrade, a HEAD miss) and streams the response.
func (h *Handler) pass(w http.ResponseWriter, r *http.Request, o *Origin, st cache.Status) {
	x, err := h.roundTrip(r.Context(), r, o, "", nil, false, nil)
	if err != nil {
		h.originError(w, err)
		return
	}
	defer x.close()
	st.FwdStatus = x.resp.StatusCode
	h.stream(w, r, x, nil, st)
}

// validate sends the stored object's validators to the origin: a 304
// freshens it, a new response replaces it, and an error is answered with
// the stale object where stale-if-error allows.
func (h *Handler) validate(w http.ResponseWriter, r *http.Request, o *Origin, key string, obj *tier.Object, why string) {
	st := cache.Status{Fwd: cache.FwdStale}
	if why == "request" {
		st.Fwd = cache.FwdRequest
	}
	x, err := h.roundTrip(r.Context(), r, o, http.MethodGet, nil, true, cache.Conditional(obj.Header))
	if err != nil || x.resp.StatusCode >= 500 {
		if h.policy.StaleIfError(cache.Header(r.Header), obj.Stored(), h.now()) {
			if x != nil {
				st.FwdStatus = x.resp.StatusCode
				x.close()
			}
			h.metrics.result(resultStale)
			st.Detail = "stale-if-error"
			h.writeStored(w, r, obj, st)
			return
		}
		if err != nil {
			if h.policy.StaleWhenDisconnected(obj.Stored()) && r.Context().Err() == nil {
				h.metrics.result(resultStale)
				st.Detail = "origin-unreachable"
				h.writeStored(w, r, obj, st)
				return
			}
			h.originError(w, err)
			return
		}
	}
	defer x.close()
	if x.resp.StatusCode == http.StatusNotModified {
		h.metrics.result(resultRevalidated)
		fresh := h.freshen(obj, x)
		st.FwdStatus, st.Stored = http.StatusNotModified, true
		h.writeStored(w, r, fresh, st)
		return
	}
	h.metrics.result(resultMiss)
	h.answer(w, r, key, x, st)
}

// freshen merges a 304 into a stored object and stores the result.
func (h *Handler) freshen(obj *tier.Object, x *exchange) *tier.Object {
	meta := obj.Meta
	s := meta.Stored()
	h.policy.Update(s, cache.Header(x.resp.Header), x.reqTime, x.respTime)
	meta.Header, meta.RequestTime, meta.ResponseTime = s.Header, s.RequestTime, s.ResponseTime
	fresh := &tier.Object{Meta: meta, Body: obj.Body}
	if err := h.tiers.Put(fresh); err != nil {
		h.log.Warn("cache: could not store a revalidated object", "key", meta.Key, "err", err)
	}
	return fresh
}

// revalidateLater validates a stale object in the background
// (stale-while-revalidate), once per key at a time.
func (h *Handler) revalidateLater(r *http.Request, o *Origin, key string, obj *tier.Object) {
	fl, leader, _ := h.flights.join(key)
	if !leader {
		return
	}
	bgReq := r.Clone(h.bgCtx)
	bgReq.Body = nil
	h.bg.Add(1)
	go func() {
		defer h.bg.Done()
		stored := false
		defer func() { h.flights.finish(key, fl, stored) }()
		x, err := h.roundTrip(h.bgCtx, bgReq, o, http.MethodGet, nil, true, cache.Conditional(obj.Header))
		if err != nil {
			return
		}
		defer x.close()
		if x.resp.StatusCode == http.StatusNotModified {
			h.freshen(obj, x)
			stored = true
			return
		}
		if ok, _ := h.policy.Storable(http.MethodGet, cache.Header(bgReq.Header), x.resp.StatusCode, cache.Header(x.resp.Header)); !ok {
			return
		}
		// Read whole within the fill budget, as a miss is: many stale
		// objects revalidated at once must not exhaust memory either.
		if x.resp.ContentLength > h.limits.MaxObject {
			return
		}
		want, ok := h.reserve(x)
		if !ok {
			return
		}
		defer h.fills.give(want)
		body, tooBig, err := readWhole(x.resp.Body, h.limits.MaxObject)
		if err != nil || tooBig {
			return
		}
		stored = h.tiers.Put(h.object(key, bgReq, x, body)) == nil
	}()
}

// forwardUnsafe forwards a request with another method, streams the
// response, and invalidates what a success changed (RFC 9111 §4.4).
func (h *Handler) forwardUnsafe(w http.ResponseWriter, r *http.Request, o *Origin) {
	var body io.Reader
	if r.ContentLength != 0 {
		body = r.Body
	}
	x, err := h.roundTrip(r.Context(), r, o, "", body, false, nil)
	if err != nil {
		h.originError(w, err)
		return
	}
	defer x.close()
	target := &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	var rm removal
	for _, u := range cache.Invalidated(r.Method, target, x.resp.StatusCode, cache.Header(x.resp.Header)) {
		pu, err := url.Parse(u)
		if err != nil {
			continue
		}
		if dest := h.router.route(pu.Host, pu.Path); dest != nil {
			rm.Keys = append(rm.Keys, dest.name()+" "+pu.RequestURI())
		}
	}
	if len(rm.Keys) > 0 {
		h.removeLocal(rm)
		h.broadcast(rm)
	}
	h.metrics.result(resultBypass)
	h.stream(w, r, x, nil, cache.Status{Fwd: cache.FwdMethod, FwdStatus: x.resp.StatusCode})
}

// budget counts the bytes reserved by fills in progress.
type budget struct {
	mu   sync.Mutex
	used int64
}

// take reserves n bytes if that keeps the total within limit.
func (b *budget) take(n, limit int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > limit {
		return false
	}
	b.used += n
	return true
}

func (b *budget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}
