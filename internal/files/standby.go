package files

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
)

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
		for _, id := range st.ActiveNodes() {
			if id != s.self && s.cl.Alive(id) {
				candidates = append(candidates, id)
			}
		}
		if len(candidates) == 0 {
			return // the file's targets are not needed (a lookup per write)
		}
		f := st.File(path)
		if f == nil {
			f = &meta.File{Path: path}
		}
		targets = st.Targets(f, cfg.Replicas)
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
	if err := s.peers.PushBlob(ctx, peer, BlobRef{Path: blob.Path, ID: blob.ID, Sum: blob.Sum, Size: blob.Size}, body); err != nil {
		return err
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
	ref := BlobRef{Path: f.Path, ID: f.BlobID, Sum: f.Sum.String(), Size: f.Size}
	rc, err := s.peers.FetchBlob(ctx, peer, ref)
	if err != nil {
		return fmt.Errorf("fetch %s from %s: %w", f.Path, from, err)
	}
	defer rc.Close()
	body := &throttledReader{ctx: ctx, r: rc, t: s.throttle, m: s.metrics}
	_, err = s.storeBlob(ref, body)
	if err == nil {
		s.metrics.replicaBytesIn.Add(float64(f.Size))
	}
	return err
}
