package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// ListOptions are the options of List.
type ListOptions struct {
	Prefix, Delimiter string
	After             string // cursor: ListPage.Next of the previous page
	Limit             int    // 0: the node's default (1000)
	Consistent        bool   // catch up with the leader first
}

// ListPage is one page of a listing; Next is empty on the last page.
type ListPage struct {
	Files    []FileInfo `json:"files"`
	Prefixes []string   `json:"prefixes"`
	Next     string     `json:"next"`
}

// List returns one page of files sorted by path.
func (c *Client) List(ctx context.Context, o ListOptions) (*ListPage, error) {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("prefix", o.Prefix)
	set("delimiter", o.Delimiter)
	set("after", o.After)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Consistent {
		q.Set("consistent", "1")
	}
	var page ListPage
	if err := c.getJSON(ctx, "/list", q, &page); err != nil {
		return nil, err
	}
	for i := range page.Files {
		page.Files[i].ETag = unquoteETag(page.Files[i].ETag)
	}
	return &page, nil
}

// Status returns the /status document of a node.
func (c *Client) Status(ctx context.Context) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := c.getJSON(ctx, "/status", nil, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// History returns GET /history: every node's figures over time as the
// node holds them, newer than since (Unix seconds; 0: all), of the nodes
// named (none: every one). Decode it with the wire format in
// docs/api.md (internal/history.Dump in this module).
func (c *Client) History(ctx context.Context, since int64, nodes ...string) (json.RawMessage, error) {
	q := url.Values{"since": {strconv.FormatInt(since, 10)}}
	if len(nodes) > 0 {
		q["node"] = nodes
	}
	var raw json.RawMessage
	if err := c.getJSON(ctx, "/history", q, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// FileStatus returns the replica state of one file.
func (c *Client) FileStatus(ctx context.Context, path string) (json.RawMessage, error) {
	p, err := filesPath("/status/files/", path)
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.getJSON(ctx, p, nil, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// Config returns the cluster-wide settings.
func (c *Client) Config(ctx context.Context) (map[string]string, error) {
	var m map[string]string
	if err := c.getJSON(ctx, "/config", nil, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// SetConfig sets one cluster-wide setting and returns the whole config.
func (c *Client) SetConfig(ctx context.Context, key, value string) (map[string]string, error) {
	cl := &call{method: http.MethodPut, path: "/config/" + url.PathEscape(key), policy: idempotent,
		header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, size: int64(len(value))}
	if value != "" {
		cl.body = newBody(strings.NewReader(value))
	}
	resp, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	var m map[string]string
	if err := decodeJSON(resp, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// Leave asks the first node of the client to leave the cluster gracefully.
func (c *Client) Leave(ctx context.Context) error {
	return c.simple(ctx, &call{method: http.MethodPost, path: "/nodes/leave", policy: once, pinned: true})
}

// RemoveNode removes a (dead) node from the cluster for good.
func (c *Client) RemoveNode(ctx context.Context, id string) error {
	return c.simple(ctx, &call{method: http.MethodDelete, path: "/nodes/" + url.PathEscape(id), policy: once})
}

func (c *Client) simple(ctx context.Context, cl *call) error {
	resp, err := c.do(ctx, cl)
	if err != nil {
		return err
	}
	drain(resp)
	return nil
}

func (c *Client) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	resp, err := c.do(ctx, &call{method: http.MethodGet, path: path, query: q, policy: idempotent})
	if err != nil {
		return err
	}
	return decodeJSON(resp, v)
}
