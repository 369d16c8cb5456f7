package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
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

// handleGet serves GET and HEAD: from the local replica when this node may,
// else by redirecting to a node that holds a valid copy.
func (s *Service) handleGet(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("path")
	if err := ValidatePath(p); err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadPath, err.Error())
		return
	}
	o := parseReadOpts(r)
	j := s.judgeRead(r.Context(), p)
	if s.cfg.Explain {
		// The state this answer was judged on, for whoever has to explain it.
		w.Header().Set("X-Mure-Judged", fmt.Sprintf("applied=%d fenced=%v leased=%v lease=%s", j.applied, j.fenced, j.leased, s.cl.LeaseInfo()))
	}
	if j.pending && !j.leased {
		noLeaseError(w)
		return
	}
	if j.pending {
		pendingError(w)
		return
	}
	f, fenced, leased := j.f, j.fenced, j.leased
	if j.mayServe(s, o.stale) && s.serveLocal(w, r, f) {
		if f.Holder == s.self {
			s.resumer.read(p, f.Grant, clientID(r))
		}
		return
	}
	switch {
	case fenced:
		s.redirect(w, r, o.hop, j.hint)
	case !leased && !f.Exists():
		noLeaseError(w)
	case !f.Exists():
		if s.cfg.Explain {
			if f == nil {
				w.Header().Set("X-Mure-Record", "none")
			} else {
				w.Header().Set("X-Mure-Record", fmt.Sprintf("v=%d deleted=%v pending=%v", f.Version, f.Deleted, f.Pending))
			}
		}
		api.Error(w, http.StatusNotFound, api.CodeNotFound, "no file at "+p)
	default:
		target := s.pickReplica(f)
		if target == "" && !leased {
			noLeaseError(w) // the copy may be here, but it cannot be confirmed current
			return
		}
		if target == "" {
			api.Unavailable(w, 1, api.CodeUnavailable, "no reachable node holds a valid copy of "+p+" right now")
			return
		}
		s.redirect(w, r, o.hop, target)
	}
}

// serveLocal writes the local copy of f; false when the copy is missing
// or failed its checksum check (the caller then redirects). A copy found
// corrupt while it is sent aborts the response: the client sees the
// connection close before Content-Length bytes, never wrong bytes as a
// complete answer.
func (s *Service) serveLocal(w http.ResponseWriter, r *http.Request, f *meta.File) bool {
	b, err := s.st.Open(f.Path, f.BlobID)
	if err != nil {
		switch {
		case errors.Is(err, store.ErrChecksum):
			s.lost(f, err)
		case errors.Is(err, store.ErrNotFound):
			if s.missing(f) {
				s.lost(f, err)
			}
		default:
			s.log.Error("open replica", "path", f.Path, "blob", f.BlobID, "err", err)
		}
		return false
	}
	defer b.Close()
	h := w.Header()
	h["Etag"] = []string{f.ETag()}
	h["X-Mure-Version"] = []string{strconv.FormatUint(f.Version, 10)}
	h["X-Mure-Sha256"] = []string{f.Sum}
	h["Content-Type"] = []string{"application/octet-stream"}
	h["Accept-Ranges"] = []string{"bytes"}
	var content io.ReadSeeker = b // checked as it is read, until verified
	if data := b.Bytes(); data != nil {
		content = bytes.NewReader(data)
	} else if file := b.File(); file != nil {
		content = file // lets net/http use sendfile
	}
	s.metrics.localReads.Inc()
	if r.Method == http.MethodGet {
		s.metrics.bytesOut.Add(float64(f.Size))
	}
	if data := b.Bytes(); data != nil && plainRead(r) {
		// A whole small file from memory: one buffered write with the
		// headers. ServeContent would copy through ReadFrom, which flushes
		// the headers in a write of their own.
		h["Last-Modified"] = []string{f.Modified.Time().Format(http.TimeFormat)}
		h["Content-Length"] = []string{strconv.Itoa(len(data))}
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(data)
		}
		return true
	}
	http.ServeContent(w, r, "", f.Modified.Time(), content)
	if err := b.CheckErr(); err != nil {
		s.lost(f, err)
		panic(http.ErrAbortHandler) // close the connection mid-body
	}
	return true
}

var pickCounter atomic.Uint64

// pickReplica chooses a node to redirect a read to: the write-right holder
// when it has a valid copy, else the valid replicas in turn, preferring the
// ones gossip sees alive.
func (s *Service) pickReplica(f *meta.File) string {
	if f.Holder != "" && f.Holder != s.self && f.IsValidOn(f.Holder) && s.cl.Alive(f.Holder) {
		return f.Holder
	}
	var alive, any []string
	for _, id := range f.Valid {
		if id == s.self {
			continue
		}
		any = append(any, id)
		if s.cl.Alive(id) {
			alive = append(alive, id)
		}
	}
	if len(alive) == 0 {
		alive = any
	}
	if len(alive) == 0 {
		return ""
	}
	return alive[pickCounter.Add(1)%uint64(len(alive))]
}

// redirect answers 307 to the same request on node target.
func (s *Service) redirect(w http.ResponseWriter, r *http.Request, hop int, target string) {
	if hop >= s.cfg.MaxHops {
		api.Error(w, http.StatusLoopDetected, api.CodeRedirectLoop, "too many redirects ("+strconv.Itoa(hop)+"); the cluster is changing, retry shortly")
		return
	}
	addr, _, ok := s.nodeAddrs(target)
	if !ok || target == s.self {
		api.Unavailable(w, 1, api.CodeUnavailable, "the node holding this file ("+target+") is not reachable from here")
		return
	}
	q := r.URL.Query()
	q.Set("hop", strconv.Itoa(hop+1))
	u := url.URL{Scheme: "http", Host: addr, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: q.Encode()}
	s.metrics.redirects.WithLabelValues(r.Method).Inc()
	w.Header().Set("Location", u.String())
	w.Header().Set("X-Mure-Redirect", target)
	api.JSON(w, http.StatusTemporaryRedirect, map[string]string{"redirect": u.String(), "node": target})
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

// noLeaseError answers a read this node cannot judge: it has no read lease,
// so it cannot confirm its view of the file with the cluster leader.
func noLeaseError(w http.ResponseWriter) {
	api.Unavailable(w, 1, api.CodeNoQuorum, "this node cannot confirm its view with the cluster leader (no read lease); retry on another node, or add ?stale=1 to accept a possibly old copy")
}

// plainRead reports whether r asks for a whole file without conditions.
func plainRead(r *http.Request) bool {
	h := r.Header
	return len(h["Range"]) == 0 && len(h["If-Match"]) == 0 && len(h["If-None-Match"]) == 0 &&
		len(h["If-Modified-Since"]) == 0 && len(h["If-Unmodified-Since"]) == 0 && len(h["If-Range"]) == 0
}

// readJudgment is what a node knows when it judges a read of one path:
// fence and lease first, the record after, so that the record is at least
// as new as the state they were judged on (a record read earlier could
// predate the very write the fence is about).
type readJudgment struct {
	applied uint64
	fenced  bool
	hint    string // a fenced path: the node the writer is on
	leased  bool
	f       *meta.File
	pending bool // still being made visible after the settle wait: 503
}

// judgeRead gathers the judgment of a read of p. A pending version is
// waited for: no node answers for a version until the leader has fenced
// every node that could still answer for the one before.
func (s *Service) judgeRead(ctx context.Context, p string) readJudgment {
	j := readJudgment{applied: s.fsm.Applied()}
	fc, fenced := s.fences.check(p, j.applied)
	j.fenced, j.hint = fenced, fc.hint
	j.leased = s.cl.HasReadLease()
	j.f = s.fsm.File(p)
	if j.f != nil && j.f.Pending && !s.cfg.UnsafeReads {
		if j.f = s.awaitSettled(ctx, p); j.f != nil && j.f.Pending {
			j.pending = true
		}
	}
	return j
}

// mayServe reports whether the local copy may answer the read (stale: the
// client accepts a copy this node cannot confirm with the leader).
func (j *readJudgment) mayServe(s *Service, stale bool) bool {
	if j.pending || !j.f.Exists() {
		return false
	}
	if s.cfg.UnsafeReads {
		return true
	}
	return j.f.IsValidOn(s.self) && !j.fenced && (j.leased || stale)
}
