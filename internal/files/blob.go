package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
)

// handleBlobGet serves a committed blob to a peer that is resuming its
// replica. Peers are authenticated by the transport. A blob that fails its
// checksum check is not served (or, found mid-stream, the response is cut
// short; the peer checks the sum of what it receives anyway).
func (s *Service) handleBlobGet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	path, id := q.Get("path"), q.Get("id")
	b, err := s.st.Open(path, id)
	if err != nil {
		if errors.Is(err, store.ErrChecksum) {
			s.lostBlob(path, id, err)
		}
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrChecksum) {
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
	s.metrics.replicaBytesOut.Add(float64(n))
	if err := b.CheckErr(); err != nil {
		s.lostBlob(path, id, err)
		panic(http.ErrAbortHandler)
	}
}

// lostBlob is lost for a blob known by path and id.
func (s *Service) lostBlob(path, id string, err error) {
	if f := s.fsm.File(path); f.Exists() && f.BlobID == id {
		s.lost(f, err)
	}
}

// handleBlobPut stores a blob pushed by a writer (the standby copy) and
// answers only once it is durable and its checksum verified.
func (s *Service) handleBlobPut(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, err := strconv.ParseInt(q.Get("size"), 10, 64)
	if err != nil || size < 0 || size > s.cfg.MaxBody {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "bad size")
		return
	}
	s.protect.add(q.Get("path"), q.Get("id"), 2*s.cfg.WriteTimeout)
	info, err := s.storeBlob(q.Get("path"), q.Get("id"), q.Get("sha256"), size, r.Body)
	if err != nil {
		if errors.Is(err, store.ErrNoSpace) {
			api.Error(w, http.StatusInsufficientStorage, api.CodeNoSpace, err.Error())
			return
		}
		api.Error(w, http.StatusInternalServerError, api.CodeInternal, err.Error())
		return
	}
	s.metrics.replicaBytesIn.Add(float64(info.Size))
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) storeBlob(path, id, sum string, size int64, body io.Reader) (store.Info, error) {
	if err := ValidatePath(path); err != nil {
		return store.Info{}, err
	}
	wr, err := s.st.Create(path, id)
	if err != nil {
		return store.Info{}, err
	}
	if _, err := io.Copy(wr, io.LimitReader(body, size+1)); err != nil {
		wr.Abort()
		return store.Info{}, fmt.Errorf("receive blob %s: %w", path, err)
	}
	return wr.CommitVerify(sum, size)
}

// pushStandby makes the blob durable on one more node when the durability
// setting asks for it and another node is alive. It returns the nodes that
// now hold it (besides this one).
func (s *Service) pushStandby(ctx context.Context, path string, blob store.Info) ([]string, error) {
	cfg := s.config()
	if cfg.LocalOnly {
		return nil, nil
	}
	var candidates []string
	var targets []string
	s.fsm.Read(func(st *meta.State) {
		f := st.File(path)
		if f == nil {
			f = &meta.File{Path: path}
		}
		targets = st.Targets(f, cfg.Replicas)
		for _, id := range st.ActiveNodes() {
			if id != s.self && s.cl.Alive(id) {
				candidates = append(candidates, id)
			}
		}
	})
	if len(candidates) == 0 {
		return nil, nil // a cluster of one: the local copy is all there is
	}
	// Prefer nodes that should hold the file anyway.
	slices.SortStableFunc(candidates, func(a, b string) int {
		ia, ib := slices.Contains(targets, a), slices.Contains(targets, b)
		switch {
		case ia && !ib:
			return -1
		case ib && !ia:
			return 1
		}
		return 0
	})
	return s.hedgedPush(ctx, candidates, blob)
}

// hedgedPush sends the blob to the candidates in turn until one stores it.
// A candidate that has not answered within a grace period proportional to
// the size (e.g. a paused process that gossip still thinks alive) does not
// hold the write up: the next candidate starts in parallel, and the first
// success wins.
func (s *Service) hedgedPush(ctx context.Context, candidates []string, blob store.Info) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()                                                                     // stops the attempts still running once one succeeded
	grace := 300*time.Millisecond + time.Duration(blob.Size/(64<<10))*time.Millisecond // ~64 MB/s
	type result struct {
		id  string
		err error
	}
	results := make(chan result, len(candidates))
	running, next := 0, 0
	var lastErr error
	start := func() {
		id := candidates[next]
		next++
		running++
		go func() {
			_, peer, ok := s.nodeAddrs(id)
			if !ok {
				results <- result{id, fmt.Errorf("unknown node %s", id)}
				return
			}
			results <- result{id, s.pushBlob(ctx, peer, blob)}
		}()
	}
	start()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for running > 0 {
		select {
		case r := <-results:
			running--
			if r.err == nil {
				return []string{r.id}, nil
			}
			lastErr = r.err
			s.log.Warn("standby push failed", "node", r.id, "path", blob.Path, "err", r.err)
			if next < len(candidates) {
				start()
				timer.Reset(grace)
			}
		case <-timer.C:
			if next < len(candidates) {
				start()
				timer.Reset(grace)
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, fmt.Errorf("no standby accepted the copy: %w", lastErr)
}

func (s *Service) pushBlob(ctx context.Context, peer string, blob store.Info) error {
	b, err := s.st.Open(blob.Path, blob.ID)
	if err != nil {
		return err
	}
	defer b.Close()
	var body io.Reader = b
	if f := b.File(); f != nil {
		body = f
	}
	q := url.Values{"path": {blob.Path}, "id": {blob.ID}, "sha256": {blob.Sum}, "size": {strconv.FormatInt(blob.Size, 10)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+peer+"/peer/files/blob?"+q.Encode(), io.NopCloser(body))
	if err != nil {
		return err
	}
	req.ContentLength = blob.Size
	resp, err := s.cl.PeerClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("push to %s: %d %s", peer, resp.StatusCode, msg)
	}
	s.metrics.replicaBytesOut.Add(float64(blob.Size))
	return nil
}

// fetchBlob copies f's current blob from a node holding it, within the
// node's replication.rate (shared with its other fetches).
func (s *Service) fetchBlob(ctx context.Context, from string, f *meta.File) error {
	_, peer, ok := s.nodeAddrs(from)
	if !ok {
		return fmt.Errorf("unknown node %s", from)
	}
	q := url.Values{"path": {f.Path}, "id": {f.BlobID}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+peer+"/peer/files/blob?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := s.cl.PeerClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch %s from %s: status %d", f.Path, from, resp.StatusCode)
	}
	body := &throttledReader{ctx: ctx, r: resp.Body, t: s.throttle, m: s.metrics}
	_, err = s.storeBlob(f.Path, f.BlobID, f.Sum, f.Size, body)
	if err == nil {
		s.metrics.replicaBytesIn.Add(float64(f.Size))
	}
	return err
}
