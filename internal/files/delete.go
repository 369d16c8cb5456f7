package files

import (
	"context"
	"errors"

	"github.com/mure-dev/mure/internal/meta"
)

// Delete removes path, leaving a tombstone in the catalogue so that a node
// that missed the delete cannot bring the file back. Like Put, it returns
// a *HeldElsewhereError when another live node holds the write right, or,
// with o.Forward, hands the delete to that node.
func (s *Service) Delete(ctx context.Context, path string, o DeleteOptions) error {
	if err := checkWrite(path, o.IdempotencyKey); err != nil {
		return err
	}
	cur := s.fsm.File(path)
	if v, ok := s.idemDone(meta.KindDelete, path, o.IdempotencyKey); ok {
		_, err := s.settledDuplicate(ctx, path, v) // a retry of a delete that succeeded
		return err
	}
	if s.heldByOther(cur) {
		return s.deleteElsewhere(ctx, path, cur.Holder, o)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	res, err := s.cl.Apply(ctx, meta.Command{
		Kind: meta.KindDelete, Path: path, Node: s.self, Cond: o.Cond, Idem: idemOrRandom(o.IdempotencyKey),
		Force: cur != nil && cur.Holder != "" && cur.Holder != s.self,
	})
	if err != nil {
		return errNoQuorum("delete "+path, err)
	}
	switch {
	case errors.Is(res.Err, meta.ErrHeld):
		return s.deleteElsewhere(ctx, path, res.File.Holder, o)
	case res.Err != nil:
		return s.stateError(ctx, path, res.Err)
	}
	s.metrics.deletes.Inc()
	return nil
}
