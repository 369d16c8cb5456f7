package files

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mure-dev/mure/internal/store"
)

// Peers is the file service's traffic to other nodes, addressed by their
// peer address (host:port of the peer port): the seam between the
// protocol and its transport. Package filepeer implements it over the
// peer port's HTTP; unit tests use an in-memory fake. Errors of the remote
// file API come back as the same typed errors (NewError and the error
// types), so the caller cannot tell a forwarded refusal from a local one.
type Peers interface {
	// Invalidate tells the node to stop serving each inv.Path until it
	// has applied inv.Index; nil once the node has recorded them all.
	Invalidate(ctx context.Context, peer string, invs []Invalidation) error
	// PushBlob stores a committed blob on the node (a standby copy) and
	// returns once it is durable there and its checksum verified.
	PushBlob(ctx context.Context, peer string, blob BlobRef, body io.Reader) error
	// FetchBlob opens a committed blob held by the node.
	FetchBlob(ctx context.Context, peer string, blob BlobRef) (io.ReadCloser, error)
	// FetchBlobs fetches several committed blobs held by the node (at
	// most MaxFetchBatch, small ones: the answer is read in one go), in
	// one request where the node serves it. each is called in order with
	// each blob the node has, its index in blobs and its content (read
	// it before returning); a blob the node does not have is skipped. An
	// error of each ends the fetch and is returned.
	FetchBlobs(ctx context.Context, peer string, blobs []BlobRef, each func(i int, body io.Reader) error) error
	// Read opens a read forwarded to the node (which runs Open).
	Read(ctx context.Context, peer, path string, o OpenOptions) (Info, io.ReadCloser, error)
	// Put forwards a write to the node (which runs Put).
	Put(ctx context.Context, peer, path string, body io.Reader, o PutOptions) (Info, error)
	// Delete forwards a delete to the node (which runs Delete).
	Delete(ctx context.Context, peer, path string, o DeleteOptions) error
}

// BlobRef names a committed blob and what it must contain.
type BlobRef struct {
	Path, ID, Sum string
	Size          int64
}

// Invalidation asks a node to stop serving Path until it has applied
// Index; Hint is a node that holds the new state.
type Invalidation struct {
	Path  string `json:"path"`
	Index uint64 `json:"index"`
	Hint  string `json:"hint"`
}

// Invalidated records an invalidation received from the leader.
func (s *Service) Invalidated(inv Invalidation) {
	if s.fsm.Applied() < inv.Index {
		s.fences.add(inv.Path, inv.Index, inv.Hint)
	}
	s.metrics.invalidations.Inc()
}

// OpenBlob opens a committed blob for a peer that is resuming its replica
// (store.ErrNotFound if it is absent or fails its checksum check). The
// caller reports a check that fails while it streams with BlobFailed.
func (s *Service) OpenBlob(path, id string) (*store.Blob, error) {
	b, err := s.st.Open(path, id)
	if errors.Is(err, store.ErrChecksum) {
		s.lostBlob(path, id, err)
		return nil, fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	return b, err
}

// BlobSent records n bytes of a blob sent to a peer, and a failed check
// (err non-nil) found while sending it.
func (s *Service) BlobSent(path, id string, n int64, err error) {
	s.metrics.replicaBytesOut.Add(float64(n))
	if err != nil {
		s.lostBlob(path, id, err)
	}
}

// lostBlob is lost for a blob known by path and id.
func (s *Service) lostBlob(path, id string, err error) {
	if f := s.fsm.File(path); f.Exists() && f.BlobID == id {
		s.lost(f, err)
	}
}

// StoreBlob stores a blob pushed by a writer (the standby copy) and
// returns once it is durable and its checksum verified.
func (s *Service) StoreBlob(blob BlobRef, body io.Reader) error {
	if blob.Size < 0 || blob.Size > s.cfg.MaxBody {
		return kindErr(ErrBadRequest, nil, "bad size %d", blob.Size)
	}
	s.protect.add(blob.Path, blob.ID, 2*s.cfg.WriteTimeout)
	info, err := s.storeBlob(blob, body)
	if err != nil {
		if errors.Is(err, store.ErrNoSpace) {
			return kindErr(ErrNoSpace, err, "%s", err.Error())
		}
		return err
	}
	s.metrics.replicaBytesIn.Add(float64(info.Size))
	return nil
}

func (s *Service) storeBlob(blob BlobRef, body io.Reader) (store.Info, error) {
	if err := ValidatePath(blob.Path); err != nil {
		return store.Info{}, err
	}
	wr, err := s.st.Create(blob.Path, blob.ID)
	if err != nil {
		return store.Info{}, err
	}
	if _, err := io.Copy(wr, io.LimitReader(body, blob.Size+1)); err != nil {
		wr.Abort()
		return store.Info{}, fmt.Errorf("receive blob %s: %w", blob.Path, err)
	}
	return wr.CommitVerify(blob.Sum, blob.Size)
}
