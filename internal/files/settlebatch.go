package files

import (
	"context"
	"errors"

	"github.com/mure-dev/mure/internal/meta"
)

// On the leader, the settles of writes whose barriers end while another
// settle is being applied go in one Settles entry (core v6, Service.settles),
// up to meta.MaxItems: a write at N servers cost a commit and a settle,
// each appended, sent to every follower and applied by every node. Each
// write still waits for the entry that carries its own settle, so what it
// is told, and when, is unchanged (docs/decisions/0052-settles-batched.md).
// A batch is given until the latest deadline among its writers.

func newSettles(s *Service) *batcher[meta.Item, error] {
	return &batcher[meta.Item, error]{max: meta.MaxItems, apply: s.applySettles}
}

// applySettles commits items as one Settles entry, or one Settle each for
// a single item or while a voter is older than core v6. A settle refused
// as stale (the file changed since) is not an error: a later version
// superseded it.
func (s *Service) applySettles(ctx context.Context, items []meta.Item) []error {
	errs := make([]error, len(items))
	if len(items) > 1 {
		_, err := s.cl.Apply(ctx, meta.Command{Kind: meta.KindSettles, Items: items})
		if !errors.Is(err, meta.ErrUnsupported) {
			for i := range errs {
				errs[i] = err
			}
			return errs
		}
	}
	for i, it := range items {
		res, err := s.cl.Apply(ctx, meta.Command{Kind: meta.KindSettle, Path: it.Path, Version: it.Version})
		if err == nil && res.Err != nil && !errors.Is(res.Err, meta.ErrStale) {
			err = res.Err
		}
		errs[i] = err
	}
	return errs
}
