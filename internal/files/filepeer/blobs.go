package filepeer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/files"
	"github.com/mure-dev/mure/internal/store"
)

// A batch fetch (POST /peer/files/blobs) asks for several small blobs in
// one request: the body is a JSON array of {"path", "id"}; the answer is
// one frame per blob asked, in order: its size as 8 bytes big-endian and
// its bytes, or the size -1 for a blob the node does not have. A blob
// found to fail its checksum while it is sent cuts the answer short, as
// for one blob (the receiver checks every blob's sum anyway).

// blobWant names one blob of a batch fetch.
type blobWant struct {
	Path string `json:"path"`
	ID   string `json:"id"`
}

// absent is the frame size of a blob the node does not have (-1).
const absent = ^uint64(0)

// blobs serves a batch fetch.
func (s *server) blobs(w http.ResponseWriter, r *http.Request) { serveBlobs(w, r, s.svc) }

// blobSource is what a batch fetch is served from: the file service.
type blobSource interface {
	OpenBlob(path, id string) (*store.Blob, error)
	BlobSent(path, id string, n int64, err error)
}

func serveBlobs(w http.ResponseWriter, r *http.Request, src blobSource) {
	var wants []blobWant
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&wants); err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "a batch fetch's body is a JSON array of {path, id}: "+err.Error())
		return
	}
	if len(wants) == 0 || len(wants) > files.MaxFetchBatch {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, fmt.Sprintf("a batch fetch asks for 1 to %d blobs, not %d", files.MaxFetchBatch, len(wants)))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, want := range wants {
		if !sendFrame(bw, src, want) {
			bw.Flush()
			panic(http.ErrAbortHandler) // a corrupt blob: cut the answer short
		}
	}
	bw.Flush()
}

// sendFrame writes one blob's frame; false if the blob failed its check
// while it was sent.
func sendFrame(bw *bufio.Writer, src blobSource, want blobWant) bool {
	var hdr [8]byte
	b, err := src.OpenBlob(want.Path, want.ID)
	if err != nil {
		// Not here, or not readable: the fetcher tries again later, maybe
		// from another node.
		binary.BigEndian.PutUint64(hdr[:], absent)
		bw.Write(hdr[:])
		return true
	}
	defer b.Close()
	binary.BigEndian.PutUint64(hdr[:], uint64(b.Size()))
	bw.Write(hdr[:])
	n, _ := io.Copy(bw, b)
	src.BlobSent(want.Path, want.ID, n, b.CheckErr())
	return b.CheckErr() == nil && n == b.Size()
}

// FetchBlobs implements files.Peers: one request to /peer/files/blobs, or
// one request per blob to a node that does not serve that route (an
// older version, during an upgrade).
func (t *Transport) FetchBlobs(ctx context.Context, peer string, blobs []files.BlobRef, each func(i int, body io.Reader) error) error {
	if len(blobs) == 0 {
		return nil
	}
	if len(blobs) > files.MaxFetchBatch {
		return fmt.Errorf("fetch %d blobs from %s: at most %d in one batch", len(blobs), peer, files.MaxFetchBatch)
	}
	err := t.fetchBatch(ctx, peer, blobs, each)
	if !errors.Is(err, errNoRoute) {
		return err
	}
	for i, b := range blobs {
		if err := t.fetchOne(ctx, peer, i, b, each); err != nil {
			return err
		}
	}
	return nil
}

func (t *Transport) fetchBatch(ctx context.Context, peer string, blobs []files.BlobRef, each func(i int, body io.Reader) error) error {
	wants := make([]blobWant, len(blobs))
	for i, b := range blobs {
		wants[i] = blobWant{Path: b.Path, ID: b.ID}
	}
	body, _ := json.Marshal(wants)
	resp, err := t.do(ctx, http.MethodPost, peer, "/peer/files/blobs", nil, bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return fmt.Errorf("fetch blobs from %s: %w: status %d", peer, errNoRoute, resp.StatusCode)
	default:
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("fetch blobs from %s: status %d %s", peer, resp.StatusCode, msg)
	}
	return readFrames(bufio.NewReaderSize(resp.Body, 64<<10), blobs, each)
}

// readFrames reads the frames of blobs from r, calling each with every
// blob present. A frame whose size is not the blob's ends the answer: its
// bytes could not pass the blob's check, and what is read from a peer
// stays bounded by the sizes asked for.
func readFrames(r io.Reader, blobs []files.BlobRef, each func(i int, body io.Reader) error) error {
	var hdr [8]byte
	n := len(blobs)
	for i := range n {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return fmt.Errorf("blob %d of %d: %w", i+1, n, noEOF(err))
		}
		raw := binary.BigEndian.Uint64(hdr[:])
		if raw == absent {
			continue
		}
		size := int64(raw)
		if size != blobs[i].Size {
			return fmt.Errorf("blob %d of %d: the answer's frame has %d bytes, the blob %d", i+1, n, size, blobs[i].Size)
		}
		lr := &io.LimitedReader{R: r, N: size}
		if err := each(i, lr); err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, lr); err != nil {
			return fmt.Errorf("blob %d of %d: %w", i+1, n, err)
		}
		if lr.N > 0 {
			return fmt.Errorf("blob %d of %d: %w", i+1, n, io.ErrUnexpectedEOF)
		}
	}
	return nil
}

// noEOF turns a clean end of the answer, where a frame was due, into an
// unexpected one.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// fetchOne fetches blob i alone, for a node without the batch route.
func (t *Transport) fetchOne(ctx context.Context, peer string, i int, b files.BlobRef, each func(i int, body io.Reader) error) error {
	rc, err := t.FetchBlob(ctx, peer, b)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	return each(i, rc)
}
