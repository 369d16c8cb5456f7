package filehttp

import (
	"net/http"
	"strings"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/files"
)

// FilesPrefix is the URL prefix of file keys. Requests under it must go to
// ServeFiles directly, not through an http.ServeMux, which would "clean"
// keys such as a//b or a/./b into other keys instead of refusing them.
const FilesPrefix = "/files/"

// DefaultMaxHops bounds a chain of redirects.
const DefaultMaxHops = 8

// Handler is the native HTTP face of one node's file service.
type Handler struct {
	svc     *files.Service
	maxHops int
	// nodeHeader is the X-Mure-Node value, allocated once.
	nodeHeader []string
}

// New returns the face of svc.
func New(svc *files.Service) *Handler {
	return &Handler{svc: svc, maxHops: DefaultMaxHops, nodeHeader: []string{svc.NodeID()}}
}

// Routes registers the client API handlers other than /files/ on mux.
func (h *Handler) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /list", h.list)
	mux.HandleFunc("GET /status/files/{path...}", h.fileStatus)
}

// ServeFiles serves GET, HEAD, PUT and DELETE of /files/{path}.
func (h *Handler) ServeFiles(w http.ResponseWriter, r *http.Request) {
	r.Pattern = FilesPrefix
	r.SetPathValue("path", strings.TrimPrefix(r.URL.Path, FilesPrefix))
	w.Header()["X-Mure-Node"] = h.nodeHeader // which node answered (after redirects)
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.get(w, r)
	case http.MethodPut:
		h.put(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT, DELETE")
		api.Error(w, http.StatusMethodNotAllowed, api.CodeMethod, r.Method+" is not allowed on files; use GET, HEAD, PUT or DELETE")
	}
}

// forwardAsked reports whether the client asked this node to forward the
// request rather than redirect it (X-Mure-Forward: 1).
func forwardAsked(r *http.Request) bool {
	v := r.Header["X-Mure-Forward"]
	return len(v) > 0 && (v[0] == "1" || v[0] == "true")
}
