package filehttp

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/files"
)

// fail answers err, an error of the file API: a redirect for
// *files.HeldElsewhereError, else a JSON error (docs/api.md, "Errors").
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, hop int, err error) {
	var held *files.HeldElsewhereError
	var un *files.UnavailableError
	switch {
	case errors.As(err, &held):
		h.redirect(w, r, hop, held)
	case errors.As(err, &un):
		secs := max(int((un.RetryAfter+999_999_999)/1_000_000_000), 1)
		code := api.CodeUnavailable
		if errors.Is(err, files.ErrNoQuorum) {
			code = api.CodeNoQuorum
		}
		api.Unavailable(w, secs, code, un.Error())
	default:
		status, code := statusOf(err)
		api.Error(w, status, code, err.Error())
	}
}

// statusOf maps the file API's other errors to a status and code.
func statusOf(err error) (int, string) {
	switch {
	case errors.Is(err, files.ErrBadPath):
		return http.StatusBadRequest, api.CodeBadPath
	case errors.Is(err, files.ErrBadRequest):
		return http.StatusBadRequest, api.CodeBadRequest
	case errors.Is(err, files.ErrTruncated):
		return http.StatusBadRequest, api.CodeTruncated
	case errors.Is(err, files.ErrNotFound):
		return http.StatusNotFound, api.CodeNotFound
	case errors.Is(err, files.ErrPrecondition):
		return http.StatusPreconditionFailed, api.CodePrecondition
	case errors.Is(err, files.ErrConflict):
		return http.StatusConflict, api.CodeConflict
	case errors.Is(err, files.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, api.CodeTooLarge
	case errors.Is(err, files.ErrNoSpace):
		return http.StatusInsufficientStorage, api.CodeNoSpace
	}
	return http.StatusInternalServerError, api.CodeInternal
}

// redirect answers 307 to the same request on the node held names.
func (h *Handler) redirect(w http.ResponseWriter, r *http.Request, hop int, held *files.HeldElsewhereError) {
	if hop >= h.maxHops {
		api.Error(w, http.StatusLoopDetected, api.CodeRedirectLoop, "too many redirects ("+strconv.Itoa(hop)+"); the cluster is changing, retry shortly")
		return
	}
	if held.Addr == "" {
		api.Unavailable(w, 1, api.CodeUnavailable, "the node holding this file ("+held.Node+") is not reachable from here")
		return
	}
	q := r.URL.Query()
	q.Set("hop", strconv.Itoa(hop+1))
	scheme := "http"
	if r.TLS != nil { // a cluster's client ports speak TLS all or none
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: held.Addr, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: q.Encode()}
	h.svc.Metrics().Redirected(r.Method)
	w.Header().Set("Location", u.String())
	w.Header().Set("X-Mure-Redirect", held.Node)
	api.JSON(w, http.StatusTemporaryRedirect, map[string]string{"redirect": u.String(), "node": held.Node})
}
