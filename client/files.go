package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// PutOptions are the options of Put.
type PutOptions struct {
	// Size is the length of the body when > 0 (sent as Content-Length).
	// 0 or negative means unknown: the body is sent chunked, except that the
	// length of a *bytes.Reader, *bytes.Buffer or *strings.Reader is
	// detected. Pass a nil body to write an empty file.
	Size int64
	// IfMatch: replace only if the current ETag is this one.
	IfMatch string
	// IfNoneMatch: create only (If-None-Match: *).
	IfNoneMatch bool
	// IdempotencyKey is sent with every attempt; generated when empty.
	IdempotencyKey string
}

// Put writes a whole file. If body is an io.Seeker it can be re-sent after a
// redirect or an ambiguous failure; otherwise only while none of it was read.
func (c *Client) Put(ctx context.Context, path string, body io.Reader, o *PutOptions) (*FileInfo, error) {
	if o == nil {
		o = &PutOptions{}
	}
	p, err := filesPath("/files/", path)
	if err != nil {
		return nil, err
	}
	cl := &call{method: http.MethodPut, path: p, header: http.Header{}, policy: keyed, size: o.Size}
	if body != nil {
		if cl.size <= 0 {
			cl.size = bodyLen(body)
		}
		if cl.size != 0 {
			cl.body = newBody(body)
		}
	}
	if o.IfMatch != "" {
		cl.header.Set("If-Match", quoteETag(o.IfMatch))
	}
	if o.IfNoneMatch {
		cl.header.Set("If-None-Match", "*")
	}
	cl.setIdempotencyKey(o.IdempotencyKey)
	return c.write(ctx, cl)
}

// GetOptions are the options of Get.
type GetOptions struct {
	// Offset and Length select a range (Length 0: to the end).
	Offset, Length int64
	// Stale serves the node's local copy even if it may be old.
	Stale bool
	// IfNoneMatch: answer ErrNotModified if the ETag is still this one.
	IfNoneMatch string
}

// Reader is the content of a file being read. Info.Size is the size of the
// whole file, even for a range.
type Reader struct {
	io.ReadCloser
	Info FileInfo
}

// Get reads a file. The body is streamed: the caller must Close the Reader.
// A missing file is an error wrapping ErrNotFound.
func (c *Client) Get(ctx context.Context, path string, o *GetOptions) (*Reader, error) {
	if o == nil {
		o = &GetOptions{}
	}
	if o.Offset < 0 || o.Length < 0 {
		return nil, fmt.Errorf("mure: negative offset or length")
	}
	p, err := filesPath("/files/", path)
	if err != nil {
		return nil, err
	}
	cl := &call{method: http.MethodGet, path: p, header: http.Header{}, policy: idempotent}
	if o.Offset > 0 || o.Length > 0 {
		r := "bytes=" + strconv.FormatInt(o.Offset, 10) + "-"
		if o.Length > 0 {
			r += strconv.FormatInt(o.Offset+o.Length-1, 10)
		}
		cl.header.Set("Range", r)
	}
	if o.Stale {
		cl.query = url.Values{"stale": {"1"}}
	}
	if o.IfNoneMatch != "" {
		cl.header.Set("If-None-Match", quoteETag(o.IfNoneMatch))
	}
	resp, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotModified {
		drain(resp)
		return nil, &APIError{Status: resp.StatusCode, Message: "not modified", Node: resp.Request.URL.Host}
	}
	return &Reader{ReadCloser: resp.Body, Info: infoFromHeader(path, resp)}, nil
}

// Stat returns a file's metadata (HEAD).
func (c *Client) Stat(ctx context.Context, path string) (*FileInfo, error) {
	p, err := filesPath("/files/", path)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, &call{method: http.MethodHead, path: p, policy: idempotent})
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	fi := infoFromHeader(path, resp)
	return &fi, nil
}

// DeleteOptions are the options of Delete.
type DeleteOptions struct {
	IfMatch        string
	IdempotencyKey string // generated when empty
}

// Delete removes a file; a missing file is an error wrapping ErrNotFound.
func (c *Client) Delete(ctx context.Context, path string, o *DeleteOptions) error {
	if o == nil {
		o = &DeleteOptions{}
	}
	p, err := filesPath("/files/", path)
	if err != nil {
		return err
	}
	cl := &call{method: http.MethodDelete, path: p, header: http.Header{}, policy: keyed}
	if o.IfMatch != "" {
		cl.header.Set("If-Match", quoteETag(o.IfMatch))
	}
	cl.setIdempotencyKey(o.IdempotencyKey)
	resp, err := c.do(ctx, cl)
	if err != nil {
		return err
	}
	drain(resp)
	return nil
}

// CopyOptions are the options of Copy.
type CopyOptions struct {
	// Move deletes the source once copied (a rename: not atomic, see
	// docs/api.md).
	Move bool
	// IdempotencyKey is sent with every attempt; generated when empty.
	IdempotencyKey string
}

// Copy copies the current version of src to dst on the server (no bytes
// pass through the client), or moves it with o.Move. It returns dst's info.
func (c *Client) Copy(ctx context.Context, src, dst string, o *CopyOptions) (*FileInfo, error) {
	if o == nil {
		o = &CopyOptions{}
	}
	p, err := filesPath("/files/", dst)
	if err != nil {
		return nil, err
	}
	from, err := filesPath("", src)
	if err != nil {
		return nil, err
	}
	cl := &call{method: http.MethodPut, path: p, header: http.Header{}, policy: keyed}
	cl.header.Set("X-Mure-Copy-From", from)
	if o.Move {
		cl.header.Set("X-Mure-Move", "1")
	}
	cl.setIdempotencyKey(o.IdempotencyKey)
	return c.write(ctx, cl)
}

// setIdempotencyKey sets the key a keyed write carries on every attempt:
// key, or a fresh one when empty.
func (cl *call) setIdempotencyKey(key string) {
	if key == "" {
		key = newIdempotencyKey()
	}
	cl.header.Set("Idempotency-Key", key)
}

// write sends a keyed write (a put or a copy) and decodes the written
// version's FileInfo; its ETag falls back to the answer's ETag header.
func (c *Client) write(ctx context.Context, cl *call) (*FileInfo, error) {
	resp, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	var fi FileInfo
	if err := decodeJSON(resp, &fi); err != nil {
		return nil, err
	}
	fi.ETag = unquoteETag(fi.ETag)
	if fi.ETag == "" {
		fi.ETag = unquoteETag(resp.Header.Get("ETag"))
	}
	return &fi, nil
}
