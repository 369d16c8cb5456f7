package files

import (
	"context"
	"errors"
	"io"

	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
)

// mayTake reports whether a write may take the right in its commit: this
// node's view shows nobody else holding it (nobody, or this node: a take
// keeps a right the writer holds, and needs no grant, so a release racing
// the write costs nothing). A right held elsewhere (alive, or to take over
// with force) goes the classic way.
func (s *Service) mayTake(cur *meta.File) bool {
	return cur == nil || cur.Holder == "" || cur.Holder == s.self
}

// putTaking writes path without taking its right first: the body is
// stored and pushed to a standby, then one Commit with Take takes the
// right and commits the version (core v2; docs/protocol.md, "Writes").
// It saves a raft round trip per uncontended write; in a one-node
// cluster the version is settled by the same entry. done is false when
// the cluster refused the command (a voter older than core v2, or the
// right taken meanwhile by another node): the write must then go the
// classic way, from the blob this node already holds (body).
func (s *Service) putTaking(ctx context.Context, path string, cur *meta.File, body io.Reader, o PutOptions) (info Info, rest io.ReadCloser, done bool, err error) {
	blob, md5, err := s.receive(path, body, o.Size)
	if err != nil {
		return Info{}, nil, true, s.bodyError(err)
	}
	ctx, cancel := s.afterBody(ctx, blob.Size)
	defer cancel()
	standby, err := s.pushStandby(ctx, path, blob)
	if err != nil {
		s.st.Remove(path, blob.ID)
		return Info{}, nil, true, unavailable(ErrUnavailable, err, "the write could not be made durable on a second node: "+err.Error()+" (or set durability=local)")
	}
	res, err := s.applyCommit(ctx, meta.Command{
		Kind: meta.KindCommit, Take: true, Path: path, Node: s.self,
		BlobID: blob.ID, Size: blob.Size, Sum: blob.Sum, MD5: md5, Attrs: attrsRef(o.Attrs), Standby: standby,
		Cond: o.Cond, Idem: o.IdempotencyKey,
	})
	refused := errors.Is(err, meta.ErrUnsupported) || err == nil && errors.Is(res.Err, meta.ErrHeld)
	if refused {
		b, oerr := s.st.Open(path, blob.ID)
		if oerr != nil {
			s.st.Remove(path, blob.ID)
			return Info{}, nil, true, kindErr(ErrInternal, oerr, "could not reopen the body stored here: %v", oerr)
		}
		return Info{}, &storedBody{Blob: b, remove: func() { s.st.Remove(path, blob.ID) }}, false, nil
	}
	if err != nil {
		return Info{}, nil, true, commitError(path, err)
	}
	if res.Err != nil {
		s.st.Remove(path, blob.ID)
		return Info{}, nil, true, s.stateError(ctx, path, res.Err)
	}
	if res.Duplicate {
		s.dropUnlessCommitted(path, blob, res)
		return duplicate(res.File, res.Version), nil, true, nil
	}
	s.protect.committed(path, blob.ID, res.Index) // as in Put
	s.metrics.writes.Inc()
	s.metrics.bytesIn.Add(float64(blob.Size))
	s.resumer.written(path, res.File.Grant)
	info = infoOf(res.File)
	info.Created = !cur.Exists() // as this node saw it: the take gave no other view
	return info, nil, true, nil
}

// storedBody is a body already received into this node's store, read
// back for the classic write path; Close removes it.
type storedBody struct {
	*store.Blob
	remove func()
}

func (b *storedBody) Close() error {
	err := b.Blob.Close()
	b.remove()
	return err
}
