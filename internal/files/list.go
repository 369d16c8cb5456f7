package files

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/meta"
)

// listPage is the JSON answer of GET /list.
type listPage struct {
	Files    []FileInfo `json:"files"`
	Prefixes []string   `json:"prefixes"`
	Next     string     `json:"next"`
}

func (s *Service) handleList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 1000
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "limit must be a number from 1 to 10000")
			return
		}
		limit = n
	}
	prefix, delim := q.Get("prefix"), q.Get("delimiter")
	if strings.ContainsAny(prefix, "\x00") || len(prefix) > MaxPathLen {
		api.Error(w, http.StatusBadRequest, api.CodeBadPath, "prefix must be at most 1024 bytes without NUL")
		return
	}
	if c := q.Get("consistent"); c == "1" || c == "true" {
		if err := s.cl.CatchUp(r.Context()); err != nil {
			api.Unavailable(w, 1, api.CodeNoQuorum, "cannot reach the leader for a consistent listing: "+err.Error())
			return
		}
	}
	var entries []meta.ListEntry
	var next string
	s.fsm.Read(func(st *meta.State) {
		entries, next = st.List(prefix, delim, q.Get("after"), limit)
	})
	page := listPage{Files: []FileInfo{}, Prefixes: []string{}, Next: next}
	for _, e := range entries {
		if e.File != nil {
			page.Files = append(page.Files, infoOf(e.File))
		} else {
			page.Prefixes = append(page.Prefixes, e.Prefix)
		}
	}
	api.JSON(w, http.StatusOK, page)
}

// FileStatus is one file's replica state, as shown by GET /status/files/.
type FileStatus struct {
	*meta.File
	ETag      string   `json:"etag"`
	State     string   `json:"state"`
	Targets   []string `json:"targets"`
	LocalCopy bool     `json:"local_copy_valid"`
}

func (s *Service) handleFileStatus(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("path")
	if err := ValidatePath(p); err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadPath, err.Error())
		return
	}
	f := s.fsm.File(p)
	if f == nil {
		api.Error(w, http.StatusNotFound, api.CodeNotFound, "no file at "+p+" (never written)")
		return
	}
	st := FileStatus{File: f, ETag: f.ETag(), State: "replicated", LocalCopy: f.IsValidOn(s.self)}
	switch {
	case f.Deleted:
		st.State = "deleted"
	case f.Suspended():
		st.State = "suspended"
	}
	cfg := s.config()
	s.fsm.Read(func(ms *meta.State) { st.Targets = ms.Targets(f, cfg.Replicas) })
	api.JSON(w, http.StatusOK, st)
}
