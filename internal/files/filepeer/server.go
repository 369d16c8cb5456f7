package filepeer

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/files"
	"github.com/mure-dev/mure/internal/store"
)

// Routes registers the server side of the peer traffic on mux (the peer
// port's mux: every request there comes from an authenticated node).
// Forwarded requests are not admission-limited: a client request waiting
// on a peer while that peer's requests wait for it would deadlock.
func Routes(mux *http.ServeMux, svc *files.Service) {
	s := &server{svc: svc}
	mux.HandleFunc("POST /peer/files/invalidate", s.invalidate)
	mux.HandleFunc("POST /peer/files/invalidations", s.invalidations)
	mux.HandleFunc("GET /peer/files/blob", s.blobGet)
	mux.HandleFunc("PUT /peer/files/blob", s.blobPut)
	mux.HandleFunc("POST /peer/files/blobs", s.blobs)
	mux.HandleFunc("GET /peer/files/read", s.read)
	mux.HandleFunc("PUT /peer/files/write", s.write)
	mux.HandleFunc("POST /peer/files/delete", s.delete)
}

type server struct{ svc *files.Service }

func (s *server) invalidate(w http.ResponseWriter, r *http.Request) {
	var inv files.Invalidation
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&inv); err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, err.Error())
		return
	}
	s.svc.Invalidated(inv)
	w.WriteHeader(http.StatusNoContent)
}

// invalidations records a batch of invalidations, in order, and answers
// once every one is recorded.
func (s *server) invalidations(w http.ResponseWriter, r *http.Request) {
	var invs []files.Invalidation
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<22)).Decode(&invs); err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, err.Error())
		return
	}
	for _, inv := range invs {
		s.svc.Invalidated(inv)
	}
	w.WriteHeader(http.StatusNoContent)
}

// blobGet serves a committed blob to a peer that is resuming its replica.
// A blob that fails its checksum check is not served (or, found
// mid-stream, the response is cut short; the peer checks the sum of what
// it receives anyway).
func (s *server) blobGet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	path, id := q.Get("path"), q.Get("id")
	b, err := s.svc.OpenBlob(path, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			api.Error(w, http.StatusNotFound, api.CodeNotFound, "no such blob here")
			return
		}
		api.Error(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
		return
	}
	defer b.Close()
	w.Header().Set("Content-Length", strconv.FormatInt(b.Size(), 10))
	var src io.Reader = b
	if f := b.File(); f != nil {
		src = f
	}
	n, _ := io.Copy(w, src)
	s.svc.BlobSent(path, id, n, b.CheckErr())
	if b.CheckErr() != nil {
		panic(http.ErrAbortHandler)
	}
}

// blobPut stores a blob pushed by a writer (the standby copy) and answers
// only once it is durable and its checksum verified.
func (s *server) blobPut(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, err := strconv.ParseInt(q.Get("size"), 10, 64)
	if err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "bad size")
		return
	}
	err = s.svc.StoreBlob(files.BlobRef{Path: q.Get("path"), ID: q.Get("id"), Sum: q.Get("sha256"), Size: size}, r.Body)
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, files.ErrBadRequest):
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "bad size")
	case errors.Is(err, files.ErrNoSpace):
		api.Error(w, http.StatusInsufficientStorage, api.CodeNoSpace, err.Error())
	default:
		api.Error(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
	}
}

// forwarding returns the hop count of a forwarded request.
func forwarding(r *http.Request) files.Forwarding {
	hops, _ := strconv.Atoi(r.URL.Query().Get("hops"))
	return files.Forwarding{Forward: true, Hops: hops}
}

// read serves a forwarded read: the file API's Open, run here as if the
// client had come to this node.
func (s *server) read(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	o := files.OpenOptions{Forwarding: forwarding(r), Stale: q.Get("stale") == "1", Client: q.Get("client")}
	o.Offset, _ = strconv.ParseInt(q.Get("offset"), 10, 64)
	o.Length, _ = strconv.ParseInt(q.Get("length"), 10, 64)
	rd, err := s.svc.Open(r.Context(), q.Get("path"), o)
	if err != nil {
		writeError(w, err)
		return
	}
	setInfoHeader(w.Header(), rd.Info())
	w.Header().Set("Content-Length", strconv.FormatInt(rd.Length(), 10))
	w.WriteHeader(http.StatusOK)
	var n int64
	switch {
	case rd.Bytes() != nil:
		k, _ := w.Write(rd.Bytes())
		n = int64(k)
	case rd.File() != nil:
		n, _ = io.Copy(w, rd.File())
	default:
		n, _ = io.Copy(w, rd)
	}
	s.svc.Metrics().Sent(n)
	if err := rd.Close(); err != nil {
		panic(http.ErrAbortHandler) // a corrupt copy: cut the answer short
	}
}

// write serves a forwarded write: the file API's Put, run here.
func (s *server) write(w http.ResponseWriter, r *http.Request) {
	o := files.PutOptions{Forwarding: forwarding(r), Size: r.ContentLength, IdempotencyKey: r.URL.Query().Get("idem")}
	if err := readCond(r, &o.Cond); err != nil {
		writeError(w, err)
		return
	}
	if a := r.URL.Query().Get("attrs"); a != "" {
		if err := json.Unmarshal([]byte(a), &o.Attrs); err != nil {
			writeError(w, files.NewError(files.ErrBadRequest, "bad attrs: "+err.Error()))
			return
		}
	}
	info, err := s.svc.Put(r.Context(), r.URL.Query().Get("path"), r.Body, o)
	if err != nil {
		writeError(w, err)
		return
	}
	if info.Created {
		w.Header().Set("X-Mure-Created", "1")
	}
	api.JSON(w, http.StatusOK, info)
}

// delete serves a forwarded delete: the file API's Delete, run here.
func (s *server) delete(w http.ResponseWriter, r *http.Request) {
	o := files.DeleteOptions{Forwarding: forwarding(r), IdempotencyKey: r.URL.Query().Get("idem")}
	if err := readCond(r, &o.Cond); err != nil {
		writeError(w, err)
		return
	}
	if err := s.svc.Delete(r.Context(), r.URL.Query().Get("path"), o); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func readCond(r *http.Request, c *files.Cond) error {
	q := r.URL.Query()
	if v := q.Get("if_match"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return files.NewError(files.ErrBadRequest, "bad if_match "+strconv.Quote(v))
		}
		c.IfMatch = n
	}
	c.IfNoneMatch = q.Get("if_none_match") == "1"
	return nil
}
