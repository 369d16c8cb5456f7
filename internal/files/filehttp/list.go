package filehttp

import (
	"net/http"
	"strconv"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/files"
)

// list is GET /list: the file API's List.
func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	o := files.ListOptions{Prefix: q.Get("prefix"), Delimiter: q.Get("delimiter"), After: q.Get("after")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "limit must be a number from 1 to 10000")
			return
		}
		o.Limit = n
	}
	if c := q.Get("consistent"); c == "1" || c == "true" {
		o.Consistent = true
	}
	page, err := h.svc.List(r.Context(), o)
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	api.JSON(w, http.StatusOK, page)
}

// fileStatus is GET /status/files/{path}: one file's replica state.
func (h *Handler) fileStatus(w http.ResponseWriter, r *http.Request) {
	st, err := h.svc.FileStatus(r.PathValue("path"))
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	api.JSON(w, http.StatusOK, st)
}
