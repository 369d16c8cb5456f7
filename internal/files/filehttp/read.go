package filehttp

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/mure-dev/mure/internal/files"
)

// readOpts are the query options of a GET/HEAD.
type readOpts struct {
	hop   int
	stale bool
}

func parseReadOpts(r *http.Request) readOpts {
	var o readOpts
	if r.URL.RawQuery == "" {
		return o
	}
	q := r.URL.Query()
	o.hop, _ = strconv.Atoi(q.Get("hop"))
	o.stale = q.Get("stale") == "1" || q.Get("stale") == "true"
	return o
}

// get serves GET and HEAD: the file API's Open, answered with the content
// or, when another node must serve it, a redirect there.
func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("path")
	o := parseReadOpts(r)
	opts := files.OpenOptions{Forwarding: files.Forwarding{Forward: forwardAsked(r)}, Stale: o.stale, Redirected: o.hop}
	if h.svc.Explains() {
		opts.Explain = &files.Explanation{}
	}
	rd, err := h.svc.Open(r.Context(), p, opts)
	if ex := opts.Explain; ex != nil {
		// The state this answer was judged on, for whoever has to explain it.
		w.Header().Set("X-Mure-Judged", ex.Judged)
		if ex.Record != "" {
			w.Header().Set("X-Mure-Record", ex.Record)
		}
	}
	if err != nil {
		h.fail(w, r, o.hop, err)
		return
	}
	h.serve(w, r, rd)
	if rd.Holding() {
		rd.ReadBy(clientID(r))
	}
}

// serve writes the content of rd. A copy found corrupt while it is sent
// aborts the response: the client sees the connection close before
// Content-Length bytes, never wrong bytes as a complete answer.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, rd *files.Reader) {
	info := rd.Info()
	hd := w.Header()
	hd["Etag"] = []string{info.ETag}
	hd["X-Mure-Version"] = []string{strconv.FormatUint(info.Version, 10)}
	hd["X-Mure-Sha256"] = []string{info.SHA256}
	hd["Accept-Ranges"] = []string{"bytes"}
	if hasAttrs(&info) {
		setAttrHeaders(hd, &info, r, rd.Length())
	} else {
		hd["Content-Type"] = []string{defaultType}
	}
	if rd.Forwarded() {
		hd["X-Mure-Forwarded-From"] = []string{rd.Node()}
	}
	var content io.ReadSeeker = rd // checked as it is read, until verified
	data := rd.Bytes()
	if data != nil {
		content = bytes.NewReader(data)
	} else if file := rd.File(); file != nil {
		content = file // lets net/http use sendfile
	}
	if r.Method == http.MethodGet {
		h.svc.Metrics().Sent(info.Size)
	}
	if data != nil && plainRead(r) {
		// A whole small file from memory: one buffered write with the
		// headers. ServeContent would copy through ReadFrom, which flushes
		// the headers in a write of their own.
		hd["Last-Modified"] = []string{info.Modified.Format(http.TimeFormat)}
		hd["Content-Length"] = []string{strconv.Itoa(len(data))}
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(data)
		}
		rd.Close()
		return
	}
	http.ServeContent(w, r, "", info.Modified, content)
	if err := rd.Close(); err != nil {
		panic(http.ErrAbortHandler) // close the connection mid-body
	}
}

// clientID names the client for the "reads" resumption policy: the
// X-Mure-Client header when present, else the remote IP.
func clientID(r *http.Request) string {
	if c := r.Header.Get("X-Mure-Client"); c != "" {
		return c
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// condHeaders are the request headers that make a read other than a plain
// whole-file one (a range, a condition). The fast lane sends a read with
// any of them to the main port; the main handler answers it with
// http.ServeContent.
var condHeaders = []string{"Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range"}

// plainRead reports whether r asks for a whole file without conditions.
func plainRead(r *http.Request) bool {
	for _, k := range condHeaders {
		if len(r.Header[k]) > 0 {
			return false
		}
	}
	return true
}
