package files

import (
	"context"
	"errors"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// This node's replica reports go in batches (Service.reports): while one
// report is being applied, those of other fetches that finish queue, and
// the next entry (Replicas, core v5) carries them all, up to
// meta.MaxItems. With replication to every node, each write made N−1
// Replica entries, each applied by every node; under a steady stream of
// small writes a node now makes about one entry per round trip to the
// leader (docs/decisions/0051-replicas-and-releases-batched.md).

func newReplicaReports(s *Service) *batcher[meta.Item, reportOutcome] {
	return &batcher[meta.Item, reportOutcome]{max: meta.MaxItems, apply: s.applyReports, shared: true}
}

// reportOutcome is what became of one report: err if the cluster could
// not be reached; else accepted unless the state machine refused it (a
// stale version, a suspended file).
type reportOutcome struct {
	accepted bool
	err      error
}

// reportReplica applies a Replica report of f's version by this node, in
// a batch with others, and returns once this node has applied it:
// whether the state machine accepted it (a stale version is refused, not
// an error), or the error if the cluster could not be reached.
// ctx is the replication worker's: a batch is applied under it.
func (s *Service) reportReplica(ctx context.Context, f *meta.File) (bool, error) {
	o, err := s.reports.submit(ctx, meta.Item{Path: f.Path, Version: f.Version})
	if err != nil {
		return false, err
	}
	return o.accepted, o.err
}

// applyReports commits items as one Replicas entry, or one Replica entry
// each for a single item or while a voter is older than core v5.
func (s *Service) applyReports(ctx context.Context, items []meta.Item) []reportOutcome {
	outs := make([]reportOutcome, len(items))
	if len(items) > 1 {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := s.cl.Apply(cctx, meta.Command{Kind: meta.KindReplicas, Node: s.self, Items: items})
		cancel()
		if err == nil && res.Err != nil {
			err = res.Err
		}
		if !errors.Is(err, meta.ErrUnsupported) {
			for i := range outs {
				outs[i] = reportOutcome{accepted: err == nil, err: err}
			}
			if err == nil {
				for _, i := range res.Refused {
					if i >= 0 && i < len(outs) {
						outs[i].accepted = false
					}
				}
			}
			return outs
		}
	}
	for i, it := range items {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := s.cl.Apply(cctx, meta.Command{Kind: meta.KindReplica, Path: it.Path, Version: it.Version, Node: s.self})
		cancel()
		outs[i] = reportOutcome{accepted: err == nil && res.Err == nil, err: err}
	}
	return outs
}
