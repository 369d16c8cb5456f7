package files

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
)

// FileInfo is the JSON answer to a write and a row of a listing.
type FileInfo struct {
	Path     string    `json:"path"`
	Version  uint64    `json:"version"`
	ETag     string    `json:"etag"`
	Size     int64     `json:"size"`
	SHA256   string    `json:"sha256,omitempty"`
	Modified time.Time `json:"modified"`
}

func infoOf(f *meta.File) FileInfo {
	return FileInfo{Path: f.Path, Version: f.Version, ETag: f.ETag(), Size: f.Size, SHA256: f.Sum, Modified: f.Modified.Time()}
}

// writeReq is a parsed PUT or DELETE.
type writeReq struct {
	path string
	cond meta.Cond
	idem string
	hop  int
}

func parseWriteReq(r *http.Request) (writeReq, int, string, string) {
	wr := writeReq{path: r.PathValue("path")}
	if err := ValidatePath(wr.path); err != nil {
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

// handlePut is a whole-file write (see docs/protocol.md, "Write").
func (s *Service) handlePut(w http.ResponseWriter, r *http.Request) {
	wr, status, code, msg := parseWriteReq(r)
	if status != 0 {
		api.Error(w, status, code, msg)
		return
	}
	if r.ContentLength > s.cfg.MaxBody {
		api.Error(w, http.StatusRequestEntityTooLarge, api.CodeTooLarge, fmt.Sprintf("body of %d bytes exceeds this node's limit of %d bytes (--max-body)", r.ContentLength, s.cfg.MaxBody))
		return
	}
	cur := s.fsm.File(wr.path)
	if v, ok := s.idemDone(meta.KindCommit, wr.path, wr.idem); ok {
		s.writeDuplicate(w, cur, v) // a retry of a write that succeeded
		return
	}
	// Decide where the write goes before reading any of the body, so a
	// client that sent Expect: 100-continue uploads only once.
	if s.heldElsewhere(cur) {
		s.redirect(w, r, wr.hop, cur.Holder)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
	defer cancel()
	grant, heldBefore, err := s.takeRight(ctx, wr.path, cur)
	if err != nil {
		s.clusterError(w, "take the write right of "+wr.path, err)
		return
	}
	if s.refused(w, r, wr, grant) {
		return
	}
	defer s.resumer.end(wr.path, grant.File.Grant)
	release := func() {
		if !heldBefore {
			s.resumer.releaseNow(wr.path, grant.File.Grant)
		}
	}
	// The condition is checked before the body is read only on a view known
	// to be current: after a fresh Acquire (this node has applied everything
	// up to it). A holder's own view may lag behind a write of its own that
	// others already see; the state machine checks again at commit anyway.
	if err := wr.cond.Check(grant.File); err != nil && !heldBefore {
		release()
		s.stateError(w, r, wr.path, err)
		return
	}
	blob, err := s.receive(w, r, wr.path)
	if err != nil {
		release()
		s.bodyError(w, err)
		return
	}
	standby, err := s.pushStandby(ctx, wr.path, blob)
	if err != nil {
		release()
		s.st.Remove(wr.path, blob.ID)
		api.Unavailable(w, 1, api.CodeUnavailable, "the write could not be made durable on a second node: "+err.Error()+" (or set durability=local)")
		return
	}
	res, err := s.cl.Apply(ctx, meta.Command{
		Kind: meta.KindCommit, Path: wr.path, Node: s.self, Grant: grant.File.Grant,
		BlobID: blob.ID, Size: blob.Size, Sum: blob.Sum, Standby: standby,
		Cond: wr.cond, Idem: idemOrRandom(wr.idem),
	})
	if err != nil {
		s.clusterError(w, "commit "+wr.path, err)
		return
	}
	if res.Err != nil {
		s.st.Remove(wr.path, blob.ID)
		s.stateError(w, r, wr.path, res.Err)
		return
	}
	if res.Duplicate {
		s.st.Remove(wr.path, blob.ID)
		s.writeDuplicate(w, res.File, res.Version)
		return
	}
	s.metrics.writes.Inc()
	s.metrics.bytesIn.Add(float64(blob.Size))
	s.resumer.written(wr.path, res.File.Grant)
	status = http.StatusOK
	if !grant.File.Exists() {
		status = http.StatusCreated
	}
	w.Header().Set("ETag", res.File.ETag())
	api.JSON(w, status, infoOf(res.File))
}

// heldElsewhere reports whether another live node holds cur's write
// right (the write goes there).
func (s *Service) heldElsewhere(cur *meta.File) bool {
	return cur != nil && cur.Holder != "" && cur.Holder != s.self && s.cl.Alive(cur.Holder)
}

// refused answers a refusal of the state machine — a redirect to the
// holder for ErrHeld — and reports whether res was one.
func (s *Service) refused(w http.ResponseWriter, r *http.Request, wr writeReq, res *meta.Result) bool {
	switch {
	case res.Err == nil:
		return false
	case errors.Is(res.Err, meta.ErrHeld):
		s.redirect(w, r, wr.hop, res.File.Holder)
	default:
		s.stateError(w, r, wr.path, res.Err)
	}
	return true
}

// idemDone reports whether a write with this idempotency key to path was
// already applied, and the version it produced.
func (s *Service) idemDone(kind meta.Kind, path, key string) (uint64, bool) {
	var rec meta.IdemRecord
	var ok bool
	s.fsm.Read(func(st *meta.State) { rec, ok = st.Idem(key) })
	return rec.Version, ok && rec.Path == path && rec.Kind == kind
}

// writeDuplicate answers a retried write with the outcome of the first
// attempt: the version it produced (the file may have changed since).
func (s *Service) writeDuplicate(w http.ResponseWriter, cur *meta.File, version uint64) {
	info := FileInfo{Version: version, ETag: meta.ETagOf(version)}
	if cur != nil && cur.Version == version {
		info = infoOf(cur)
	} else if cur != nil {
		info.Path = cur.Path
	}
	w.Header().Set("ETag", info.ETag)
	api.JSON(w, http.StatusOK, info)
}

// takeRight returns the write right of cur's path for this node, marked
// busy in the resumer so that it is not released under the write. A
// holder skips the raft round trip (if its right was taken over meanwhile,
// the commit is refused by its fencing token); a release already on its
// way is waited for, then the right is taken again.
func (s *Service) takeRight(ctx context.Context, path string, cur *meta.File) (res *meta.Result, heldBefore bool, err error) {
	if cur != nil && cur.Holder == s.self {
		if s.resumer.begin(ctx, path, cur.Grant) {
			// Busy now: no release can start. Check one finished just before.
			if now := s.fsm.File(path); now.Holder == s.self && now.Grant == cur.Grant {
				return &meta.Result{File: now}, true, nil
			}
			s.resumer.end(path, cur.Grant)
		}
		cur = s.fsm.File(path)
	}
	for {
		res, err = s.cl.Apply(ctx, meta.Command{Kind: meta.KindAcquire, Path: path, Node: s.self, Force: cur != nil && cur.Holder != "" && cur.Holder != s.self})
		if err != nil || res.Err != nil {
			return res, false, err
		}
		if s.resumer.begin(ctx, path, res.File.Grant) {
			return res, false, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		cur = s.fsm.File(path)
	}
}

// receive stores the request body durably under a fresh blob ID.
func (s *Service) receive(w http.ResponseWriter, r *http.Request, path string) (store.Info, error) {
	id := newBlobID()
	s.protect.add(path, id, 2*s.cfg.WriteTimeout)
	wr, err := s.st.Create(path, id)
	if err != nil {
		return store.Info{}, err
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	n, err := io.Copy(wr, body)
	if err == nil && r.ContentLength >= 0 && n != r.ContentLength {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		wr.Abort()
		return store.Info{}, err
	}
	return wr.Commit()
}

// bodyError maps a failure to receive the body to an answer.
func (s *Service) bodyError(w http.ResponseWriter, err error) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		api.Error(w, http.StatusRequestEntityTooLarge, api.CodeTooLarge, fmt.Sprintf("body exceeds this node's limit of %d bytes (--max-body)", mbe.Limit))
	case errors.Is(err, store.ErrNoSpace):
		api.Error(w, http.StatusInsufficientStorage, api.CodeNoSpace, "this node's disk is full; the previous version is unchanged: "+err.Error())
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.Canceled):
		api.Error(w, http.StatusBadRequest, api.CodeTruncated, "the body ended before Content-Length bytes arrived; nothing was changed")
	default:
		s.log.Error("receive body", "err", err)
		api.Error(w, http.StatusInternalServerError, api.CodeInternal, "could not store the body: "+err.Error())
	}
}

// clusterError answers when the cluster could not decide (no quorum...).
func (s *Service) clusterError(w http.ResponseWriter, what string, err error) {
	s.log.Warn("cluster round trip failed", "what", what, "err", err)
	api.Unavailable(w, 1, api.CodeNoQuorum, "cannot "+what+": the cluster has no leader or quorum right now ("+err.Error()+"); writes resume when a majority of voters is back")
}

// stateError answers a refusal of the state machine.
func (s *Service) stateError(w http.ResponseWriter, r *http.Request, path string, err error) {
	if errors.Is(err, meta.ErrPrecondition) || errors.Is(err, meta.ErrNotFound) {
		// The refusal reveals the current version: answer only once it is
		// visible everywhere, or a reader could still be given the old one.
		if f := s.awaitSettled(r.Context(), path); f != nil && f.Pending {
			pendingError(w)
			return
		}
	}
	switch {
	case errors.Is(err, meta.ErrPrecondition):
		api.Error(w, http.StatusPreconditionFailed, api.CodePrecondition, err.Error())
	case errors.Is(err, meta.ErrNotFound):
		api.Error(w, http.StatusNotFound, api.CodeNotFound, err.Error())
	case errors.Is(err, meta.ErrNotHolder), errors.Is(err, meta.ErrHeld):
		api.Error(w, http.StatusConflict, api.CodeConflict, "another write took over this file meanwhile; nothing was changed by this request: "+err.Error())
	default:
		api.Error(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
	}
}

func newBlobID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// idemOrRandom makes every write carry a key, so that a commit retried
// inside the cluster is recognised as a duplicate.
func idemOrRandom(k string) string {
	if k != "" {
		return k
	}
	return "auto-" + newBlobID()
}
