package filepeer

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/mure-dev/mure/internal/files"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
)

// Transport is the client side of the file service's peer traffic: it
// implements files.Peers with requests to other nodes' peer ports.
type Transport struct {
	client func() *http.Client
}

// New returns a transport whose requests go through the client that
// client returns (the cluster's authenticated peer client).
func New(client func() *http.Client) *Transport { return &Transport{client: client} }

var _ files.Peers = (*Transport)(nil)

// expectContinueFrom is the size from which a forwarded write waits for
// the holder's "100 Continue" before sending its body.
const expectContinueFrom = 64 << 10

func (t *Transport) do(ctx context.Context, method, peer, route string, q url.Values, body io.Reader, size int64) (*http.Response, error) {
	return t.doHeader(ctx, method, peer, route, q, nil, body, size)
}

func (t *Transport) doHeader(ctx context.Context, method, peer, route string, q url.Values, hdr http.Header, body io.Reader, size int64) (*http.Response, error) {
	u := "http://" + peer + route
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	if body != nil {
		body = io.NopCloser(body) // the caller owns it
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != nil {
		req.ContentLength = size
		if size < 0 {
			req.ContentLength = -1
		}
	}
	return t.client().Do(req)
}

// Invalidate implements files.Peers. One invalidation goes to
// /peer/files/invalidate as it always did; several go in one request to
// /peer/files/invalidations, or one by one to a node that does not know
// that route yet (an older version, during an upgrade).
func (t *Transport) Invalidate(ctx context.Context, peer string, invs []files.Invalidation) error {
	if len(invs) > 1 {
		err := t.invalidate(ctx, peer, "/peer/files/invalidations", invs)
		if !errors.Is(err, errNoRoute) {
			return err
		}
	}
	for _, inv := range invs {
		if err := t.invalidate(ctx, peer, "/peer/files/invalidate", inv); err != nil {
			return err
		}
	}
	return nil
}

// errNoRoute is a peer's answer to a route it does not serve.
var errNoRoute = errors.New("route not served by this peer")

func (t *Transport) invalidate(ctx context.Context, peer, route string, body any) error {
	b, _ := json.Marshal(body)
	resp, err := t.do(ctx, http.MethodPost, peer, route, nil, bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent:
		return nil
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return fmt.Errorf("invalidate on %s: %w: status %d", peer, errNoRoute, resp.StatusCode)
	}
	return fmt.Errorf("invalidate on %s: status %d", peer, resp.StatusCode)
}

// PushBlob implements files.Peers.
func (t *Transport) PushBlob(ctx context.Context, peer string, blob files.BlobRef, body io.Reader) error {
	q := url.Values{"path": {blob.Path}, "id": {blob.ID}, "sha256": {blob.Sum}, "size": {strconv.FormatInt(blob.Size, 10)}}
	resp, err := t.do(ctx, http.MethodPut, peer, "/peer/files/blob", q, body, blob.Size)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("push to %s: %d %s", peer, resp.StatusCode, msg)
	}
	return nil
}

// FetchBlob implements files.Peers.
func (t *Transport) FetchBlob(ctx context.Context, peer string, blob files.BlobRef) (io.ReadCloser, error) {
	resp, err := t.do(ctx, http.MethodGet, peer, "/peer/files/blob", url.Values{"path": {blob.Path}, "id": {blob.ID}}, nil, 0)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("blob %s of %s on %s: %w", blob.ID, blob.Path, peer, store.ErrNotFound)
		}
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	return resp.Body, nil
}

// Read implements files.Peers: GET /peer/files/read.
func (t *Transport) Read(ctx context.Context, peer, path string, o files.OpenOptions) (files.Info, io.ReadCloser, error) {
	q := url.Values{"path": {path}, "hops": {strconv.Itoa(o.Hops)}}
	if o.Offset > 0 {
		q.Set("offset", strconv.FormatInt(o.Offset, 10))
	}
	if o.Length > 0 {
		q.Set("length", strconv.FormatInt(o.Length, 10))
	}
	if o.Stale {
		q.Set("stale", "1")
	}
	if o.Client != "" {
		q.Set("client", o.Client)
	}
	resp, err := t.do(ctx, http.MethodGet, peer, "/peer/files/read", q, nil, 0)
	if err != nil {
		return files.Info{}, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return files.Info{}, nil, readError(resp, "forwarded read on "+peer)
	}
	info, err := infoFromHeader(path, resp.Header)
	if err != nil {
		resp.Body.Close()
		return files.Info{}, nil, fmt.Errorf("forwarded read on %s: %w", peer, err)
	}
	return info, resp.Body, nil
}

// Put implements files.Peers: PUT /peer/files/write.
func (t *Transport) Put(ctx context.Context, peer, path string, body io.Reader, o files.PutOptions) (files.Info, error) {
	q := writeQuery(path, o.Hops, o.Cond, o.IdempotencyKey)
	if !o.Attrs.IsZero() {
		b, err := json.Marshal(o.Attrs)
		if err != nil {
			return files.Info{}, fmt.Errorf("forwarded write: %w", err)
		}
		q.Set("attrs", string(b))
	}
	// A large body waits for the holder's "100 Continue": a write it
	// refuses at once (a failed condition, the right gone elsewhere) is
	// then not uploaded across the cluster for nothing. A small one goes
	// at once, sparing the round trip.
	var hdr http.Header
	if o.Size < 0 || o.Size >= expectContinueFrom {
		hdr = http.Header{"Expect": {"100-continue"}}
	}
	resp, err := t.doHeader(ctx, http.MethodPut, peer, "/peer/files/write", q, hdr, body, o.Size)
	if err != nil {
		return files.Info{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return files.Info{}, readError(resp, "forwarded write on "+peer)
	}
	var info files.Info
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&info); err != nil {
		return files.Info{}, fmt.Errorf("forwarded write on %s: unreadable answer: %w", peer, err)
	}
	info.Created = resp.Header.Get("X-Mure-Created") == "1"
	return info, nil
}

// Delete implements files.Peers: POST /peer/files/delete.
func (t *Transport) Delete(ctx context.Context, peer, path string, o files.DeleteOptions) error {
	q := writeQuery(path, o.Hops, o.Cond, o.IdempotencyKey)
	resp, err := t.do(ctx, http.MethodPost, peer, "/peer/files/delete", q, nil, 0)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return readError(resp, "forwarded delete on "+peer)
	}
	return nil
}

func writeQuery(path string, hops int, c meta.Cond, idem string) url.Values {
	q := url.Values{"path": {path}, "hops": {strconv.Itoa(hops)}, "idem": {idem}}
	if c.IfMatch != 0 {
		q.Set("if_match", strconv.FormatUint(c.IfMatch, 10))
	}
	if c.IfNoneMatch {
		q.Set("if_none_match", "1")
	}
	return q
}

// setInfoHeader and infoFromHeader carry a read's Info in headers.
func setInfoHeader(h http.Header, info files.Info) {
	h.Set("X-Mure-Version", strconv.FormatUint(info.Version, 10))
	h.Set("X-Mure-Size", strconv.FormatInt(info.Size, 10))
	h.Set("X-Mure-Sha256", info.SHA256)
	h.Set("X-Mure-Modified", info.Modified.UTC().Format(time.RFC3339Nano))
	if info.MD5 != "" {
		h.Set("X-Mure-Md5", info.MD5)
	}
	if !info.Attrs.IsZero() {
		b, _ := json.Marshal(info.Attrs) // maps of strings: cannot fail
		h.Set("X-Mure-Attrs", base64.RawURLEncoding.EncodeToString(b))
	}
}

func infoFromHeader(path string, h http.Header) (files.Info, error) {
	v, err1 := strconv.ParseUint(h.Get("X-Mure-Version"), 10, 64)
	size, err2 := strconv.ParseInt(h.Get("X-Mure-Size"), 10, 64)
	mod, err3 := time.Parse(time.RFC3339Nano, h.Get("X-Mure-Modified"))
	if err1 != nil || err2 != nil || err3 != nil {
		return files.Info{}, fmt.Errorf("bad file headers (version %q, size %q, modified %q)", h.Get("X-Mure-Version"), h.Get("X-Mure-Size"), h.Get("X-Mure-Modified"))
	}
	info := files.Info{Path: path, Version: v, ETag: meta.ETagOf(v), Size: size, SHA256: h.Get("X-Mure-Sha256"), MD5: h.Get("X-Mure-Md5"), Modified: mod}
	if a := h.Get("X-Mure-Attrs"); a != "" {
		b, err := base64.RawURLEncoding.DecodeString(a)
		if err == nil {
			err = json.Unmarshal(b, &info.Attrs)
		}
		if err != nil {
			return files.Info{}, fmt.Errorf("bad X-Mure-Attrs header: %w", err)
		}
	}
	return info, nil
}
