package files

import (
	"context"
	"net/http"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/meta"
)

// handleDelete removes a file, leaving a tombstone in the catalogue so that
// a node that missed the delete cannot bring the file back.
func (s *Service) handleDelete(w http.ResponseWriter, r *http.Request) {
	wr, status, code, msg := parseWriteReq(r)
	if status != 0 {
		api.Error(w, status, code, msg)
		return
	}
	cur := s.fsm.File(wr.path)
	if _, ok := s.idemDone(meta.KindDelete, wr.path, wr.idem); ok {
		w.WriteHeader(http.StatusNoContent) // a retry of a delete that succeeded
		return
	}
	if s.heldElsewhere(cur) {
		s.redirect(w, r, wr.hop, cur.Holder)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
	defer cancel()
	res, err := s.cl.Apply(ctx, meta.Command{
		Kind: meta.KindDelete, Path: wr.path, Node: s.self, Cond: wr.cond, Idem: idemOrRandom(wr.idem),
		Force: cur != nil && cur.Holder != "" && cur.Holder != s.self,
	})
	if err != nil {
		s.clusterError(w, "delete "+wr.path, err)
		return
	}
	if s.refused(w, r, wr, res) {
		return
	}
	s.metrics.deletes.Inc()
	w.WriteHeader(http.StatusNoContent)
}
