package filehttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/auth/authhttp"
	"github.com/mure-dev/mure/internal/files"
	"github.com/mure-dev/mure/internal/meta"
)

// writeReq is a parsed PUT or DELETE.
type writeReq struct {
	path    string
	cond    meta.Cond
	idem    string
	hop     int
	forward bool
}

func parseWriteReq(r *http.Request) (writeReq, int, string, string) {
	wr := writeReq{path: r.PathValue("path"), forward: forwardAsked(r)}
	if err := files.ValidatePath(wr.path); err != nil {
		return wr, http.StatusBadRequest, api.CodeBadPath, err.Error()
	}
	if im := r.Header.Get("If-Match"); im != "" && im != "*" {
		v, ok := meta.ParseETag(strings.TrimSpace(im))
		if !ok {
			return wr, http.StatusBadRequest, api.CodeBadRequest, "If-Match must be one entity tag as returned in ETag, e.g. \"1a\""
		}
		wr.cond.IfMatch = v
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if strings.TrimSpace(inm) != "*" {
			return wr, http.StatusBadRequest, api.CodeBadRequest, "only If-None-Match: * (create only) is supported on writes"
		}
		wr.cond.IfNoneMatch = true
	}
	wr.idem = r.Header.Get("Idempotency-Key")
	if len(wr.idem) > 128 || strings.ContainsFunc(wr.idem, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		return wr, http.StatusBadRequest, api.CodeBadRequest, "Idempotency-Key must be at most 128 printable ASCII characters without spaces"
	}
	wr.hop = parseReadOpts(r).hop
	return wr, 0, "", ""
}

// put is a whole-file write: the file API's Put. The body is read only
// once the node knows it takes the write, so a client that sent Expect:
// 100-continue and is redirected uploads only once.
func (h *Handler) put(w http.ResponseWriter, r *http.Request) {
	wr, status, code, msg := parseWriteReq(r)
	if status != 0 {
		api.Error(w, status, code, msg)
		return
	}
	if src, ok := r.Header["X-Mure-Copy-From"]; ok {
		h.copy(w, r, wr, src[0])
		return
	}
	ct, ok := putType(r)
	if !ok {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, fmt.Sprintf("Content-Type %q is not a media type (e.g. text/plain; charset=utf-8); send none to keep none", r.Header.Get("Content-Type")))
		return
	}
	body := &limitedBody{r: http.MaxBytesReader(w, r.Body, h.svc.MaxBody())}
	info, err := h.svc.Put(r.Context(), wr.path, body, files.PutOptions{
		Forwarding: files.Forwarding{Forward: wr.forward}, Size: r.ContentLength, Cond: wr.cond, IdempotencyKey: wr.idem,
		Attrs: files.Attrs{ContentType: ct},
	})
	if err != nil {
		h.fail(w, r, wr.hop, err)
		return
	}
	status = http.StatusOK
	if info.Created {
		status = http.StatusCreated
	}
	w.Header().Set("ETag", info.ETag)
	api.JSON(w, status, info)
}

// copy is a PUT with X-Mure-Copy-From: SRC (percent-encoded): the file
// API's Copy, or Rename with X-Mure-Move: 1. The caller needs the right to
// read SRC (to write it, for a rename) besides the destination's, which
// the guard checked before. The body must be empty. A
// copy is always done here, forwarding its steps as needed: redirecting
// half of a compound operation would leave the client to redo it.
func (h *Handler) copy(w http.ResponseWriter, r *http.Request, wr writeReq, rawSrc string) {
	src, err := url.PathUnescape(rawSrc)
	if err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadPath, "X-Mure-Copy-From must be a percent-encoded path: "+err.Error())
		return
	}
	if r.ContentLength > 0 {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "a copy (X-Mure-Copy-From) takes no body")
		return
	}
	o := files.CopyOptions{Forwarding: files.Forwarding{Forward: true}, Cond: wr.cond, IdempotencyKey: wr.idem}
	if im := r.Header.Get("X-Mure-Copy-From-If-Match"); im != "" {
		v, ok := meta.ParseETag(strings.TrimSpace(im))
		if !ok {
			api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "X-Mure-Copy-From-If-Match must be one entity tag as returned in ETag, e.g. \"1a\"")
			return
		}
		o.SourceVersion = v
	}
	do, need := h.svc.Copy, auth.Read
	if v := r.Header.Get("X-Mure-Move"); v == "1" || v == "true" {
		do, need = h.svc.Rename, auth.Write // a rename deletes the source
	}
	// The guard checked the destination (the request's path); the source
	// is this handler's to check.
	if p, ok := authhttp.PrincipalFrom(r.Context()); ok && !p.Allowed(need, src) {
		api.Error(w, http.StatusForbidden, api.CodeForbidden, fmt.Sprintf("%s may not %s the copy source %q", p.Name(), need, src))
		return
	}
	info, err := do(r.Context(), src, wr.path, o)
	if err != nil {
		h.fail(w, r, wr.hop, err)
		return
	}
	status := http.StatusOK
	if info.Created {
		status = http.StatusCreated
	}
	w.Header().Set("ETag", info.ETag)
	api.JSON(w, status, info)
}

// delete removes a file: the file API's Delete.
func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	wr, status, code, msg := parseWriteReq(r)
	if status != 0 {
		api.Error(w, status, code, msg)
		return
	}
	err := h.svc.Delete(r.Context(), wr.path, files.DeleteOptions{
		Forwarding: files.Forwarding{Forward: wr.forward}, Cond: wr.cond, IdempotencyKey: wr.idem,
	})
	if err != nil {
		h.fail(w, r, wr.hop, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// limitedBody turns net/http's error for a body over the limit into the
// file API's, and a client that went away into a truncated body.
type limitedBody struct{ r io.Reader }

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	var mbe *http.MaxBytesError
	switch {
	case err == nil, err == io.EOF:
	case errors.As(err, &mbe):
		err = &files.TooLargeError{Size: -1, Limit: mbe.Limit}
	case errors.Is(err, context.Canceled):
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
