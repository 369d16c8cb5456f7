package client

import (
	"context"
	"net/http"
	"net/url"
)

// PurgeResult is what a node answers to a purge of its caching proxy.
type PurgeResult struct {
	// Key is the cache key (or key prefix) purged.
	Key    string `json:"key"`
	Prefix bool   `json:"prefix"`
	// RemovedHere counts the objects the node asked removed at once.
	RemovedHere int `json:"removed_here"`
	// Recorded is true when the purge is in the replicated state (nodes
	// that are down apply it when they return).
	Recorded bool `json:"recorded"`
}

// PurgeCache removes an object (or, with prefix, every object under a
// path) from the caching proxy of every node: target is the URL clients
// ask the proxy for, or a path of its default origin. Admin only; the
// node asked must run the proxy (mure serve --proxy).
func (c *Client) PurgeCache(ctx context.Context, target string, prefix bool) (*PurgeResult, error) {
	q := url.Values{"url": {target}}
	if prefix {
		q.Set("prefix", "1")
	}
	resp, err := c.do(ctx, &call{method: http.MethodPost, path: "/cache/purge", query: q, policy: idempotent})
	if err != nil {
		return nil, err
	}
	var r PurgeResult
	if err := decodeJSON(resp, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
