package files

import (
	"context"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// List returns a page of the files under o.Prefix in key order, files
// and, with a delimiter, the common prefixes that stand for "directories".
// It reads this node's catalogue, which may lag the leader's by a few
// milliseconds unless o.Consistent.
func (s *Service) List(ctx context.Context, o ListOptions) (ListPage, error) {
	limit := o.Limit
	switch {
	case limit == 0:
		limit = 1000
	case limit < 1 || limit > 10000:
		return ListPage{}, kindErr(ErrBadRequest, nil, "limit must be a number from 1 to 10000")
	}
	if strings.ContainsAny(o.Prefix, "\x00") || len(o.Prefix) > MaxPathLen {
		return ListPage{}, kindErr(ErrBadPath, nil, "prefix must be at most 1024 bytes without NUL")
	}
	if o.Consistent {
		if err := s.catchUp(ctx); err != nil {
			return ListPage{}, unavailable(ErrNoQuorum, err, "cannot reach the leader for a consistent listing: "+err.Error())
		}
	}
	var entries []meta.ListEntry
	var next string
	s.fsm.Read(func(st *meta.State) {
		entries, next = st.List(o.Prefix, o.Delimiter, o.After, limit)
	})
	page := ListPage{Files: []Info{}, Prefixes: []string{}, Next: next}
	for _, e := range entries {
		if e.File != nil {
			page.Files = append(page.Files, infoOf(e.File))
		} else {
			page.Prefixes = append(page.Prefixes, e.Prefix)
		}
	}
	return page, nil
}

// catchUp is the cluster's CatchUp, tried again for up to LeaseWait when
// it fails: the leader could not be reached or confirmed (an election, a
// leader stalled under load), which is over as soon as a lapsed lease is
// back — so a consistent listing waits as a read without a lease does
// (awaitsOwnLease) rather than fail at once.
func (s *Service) catchUp(ctx context.Context) error {
	deadline := time.Now().Add(s.cfg.LeaseWait)
	backoff := 10 * time.Millisecond
	for {
		err := s.cl.CatchUp(ctx)
		if err == nil || ctx.Err() != nil || time.Now().Add(backoff).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// FileStatus returns path's replica state as this node sees it.
func (s *Service) FileStatus(path string) (Status, error) {
	if err := ValidatePath(path); err != nil {
		return Status{}, err
	}
	f := s.fsm.File(path)
	if f == nil {
		return Status{}, kindErr(ErrNotFound, nil, "no file at %s (never written)", path)
	}
	st := Status{File: f, ETag: f.ETag(), State: "replicated", LocalCopy: f.IsValidOn(s.self), ReadOrder: s.ReadOrder(f)}
	switch {
	case f.Deleted:
		st.State = "deleted"
	case f.Suspended():
		st.State = "suspended"
	}
	cfg := s.config()
	s.fsm.Read(func(ms *meta.State) { st.Targets = ms.Targets(f, cfg.Replicas) })
	return st, nil
}
