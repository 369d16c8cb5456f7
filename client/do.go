package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mure-dev/mure/internal/pause"
)

// retryPolicy says what may be retried after the request may have been sent.
type retryPolicy int

const (
	// idempotent requests (reads) are retried after any transport error or 503.
	idempotent retryPolicy = iota
	// keyed writes carry an Idempotency-Key: retried after an ambiguous
	// error if the body can be re-sent.
	keyed
	// once: never retried once it may have been sent.
	once
)

// call is one logical request, possibly sent several times.
type call struct {
	method string
	path   string // escaped URL path, e.g. "/files/a/b"
	query  url.Values
	header http.Header
	body   *body // nil: no body
	size   int64 // body length, -1 if unknown
	policy retryPolicy
	pinned bool // only the first node, one attempt
}

// final marks an error that must not be retried.
type final struct{ error }

func (f final) Unwrap() error { return f.error }

// do runs the call with failover and returns a response with a 2xx or 304
// status; any other status is returned as an *APIError.
func (c *Client) do(ctx context.Context, cl *call) (*http.Response, error) {
	attempts, start := c.attempts, 0
	if cl.pinned {
		attempts = 1
	} else {
		start = int(c.rr.Add(1) - 1)
	}
	var lastErr error
	ambiguous := false // a write may have been applied by an earlier attempt
	fail := func(err error) error {
		if ambiguous {
			return outcomeUnknown(err)
		}
		return err
	}
	for i := 0; i < attempts; i++ {
		if i > 0 && cl.body != nil {
			if err := cl.body.rewind(); err != nil {
				return nil, fail(fmt.Errorf("%w (after: %w)", err, lastErr))
			}
		}
		if i > 0 {
			// Back off a little: the usual cause is a node that just died
			// and that the cluster has not yet noticed.
			if err := pause.For(ctx, min(50*time.Millisecond<<(i-1), time.Second)); err != nil {
				return nil, fail(err)
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, fail(err)
		}
		node := c.nodes[(start+i)%len(c.nodes)]
		resp, err := c.send(ctx, node, cl)
		if err != nil {
			var f final
			if errors.As(err, &f) {
				return nil, fail(f.error)
			}
			err = fmt.Errorf("%s %s: %w", cl.method, strings.TrimPrefix(node, "http://"), err)
			sent := !notSent(err)
			if sent && cl.policy != idempotent {
				ambiguous = true
			}
			if ctx.Err() != nil || (sent && cl.policy == once) {
				return nil, fail(err)
			}
			lastErr = err
			c.log.Debug("mure client: retrying", "method", cl.method, "path", cl.path, "node", node, "err", err)
			continue
		}
		if resp.StatusCode == http.StatusServiceUnavailable && i+1 < attempts {
			ra, hasRA := retryAfter(resp.Header)
			if cl.policy == idempotent || hasRA {
				lastErr = readAPIError(resp)
				c.log.Debug("mure client: unavailable, retrying", "method", cl.method, "path", cl.path, "node", node, "err", lastErr)
				if err := pause.For(ctx, min(ra, time.Second)); err != nil {
					return nil, fail(err)
				}
				continue
			}
		}
		if resp.StatusCode >= 400 || (resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotModified) ||
			resp.StatusCode < 200 {
			apiErr := readAPIError(resp)
			if ambiguous && resp.StatusCode >= 500 {
				return nil, outcomeUnknown(apiErr)
			}
			return nil, apiErr
		}
		return resp, nil
	}
	return nil, fail(lastErr)
}

// send sends the call to one node, following redirects.
func (c *Client) send(ctx context.Context, node string, cl *call) (*http.Response, error) {
	u, err := url.Parse(node + cl.path)
	if err != nil {
		return nil, final{err}
	}
	if len(cl.query) > 0 {
		u.RawQuery = cl.query.Encode()
	}
	for hop := 0; ; hop++ {
		req, err := c.newRequest(ctx, u, cl)
		if err != nil {
			return nil, final{err}
		}
		// Go's transport replays a request that carries an Idempotency-Key
		// (or has no body) when a reused connection fails: the error it
		// finally returns may be a dial error although an earlier try was
		// written. Remember any write, so such an error is not taken for
		// "never sent".
		var wrote atomic.Bool
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) }}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
		hc := c.hc
		if plainRead(req) {
			hc = c.readHC
		}
		resp, err := hc.Do(req)
		if err != nil {
			if wrote.Load() {
				return nil, &sentError{err}
			}
			return nil, err
		}
		loc := resp.Header.Get("Location")
		if (resp.StatusCode != http.StatusTemporaryRedirect && resp.StatusCode != http.StatusPermanentRedirect) || loc == "" {
			return resp, nil
		}
		drain(resp)
		next, err := u.Parse(loc)
		if err != nil {
			return nil, final{fmt.Errorf("node %s: bad redirect Location %q: %w", u.Host, loc, err)}
		}
		if hop >= maxRedirects {
			return nil, final{fmt.Errorf("node %s: too many redirects (last to %s)", u.Host, next.Host)}
		}
		if cl.body != nil {
			if err := cl.body.rewind(); err != nil {
				return nil, final{fmt.Errorf("node %s redirected to %s: %w", u.Host, next.Host, err)}
			}
		}
		c.log.Debug("mure client: redirect", "method", cl.method, "from", u.Host, "to", next.String())
		u = next
	}
}

func (c *Client) newRequest(ctx context.Context, u *url.URL, cl *call) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, cl.method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for k, v := range cl.header {
		req.Header[k] = v
	}
	if cl.body != nil {
		req.Body = cl.body.send()
		req.ContentLength = cl.size
		req.Header.Set("Expect", "100-continue")
	} else if cl.method == http.MethodPut || cl.method == http.MethodPost {
		req.Body = http.NoBody
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	} else if c.user != "" {
		req.SetBasicAuth(c.user, c.password)
	}
	if c.forward {
		req.Header.Set("X-Mure-Forward", "1")
	}
	req.Header.Set("User-Agent", "mure-client")
	return req, nil
}

// plainRead reports whether req is a whole-file read with no condition,
// the request a node's front answers itself: it goes on the read pool,
// whose connections carry nothing else (WithReadHTTPClient).
func plainRead(req *http.Request) bool {
	return (req.Method == http.MethodGet || req.Method == http.MethodHead) && strings.HasPrefix(req.URL.Path, "/files/") &&
		req.URL.RawQuery == "" && req.Header.Get("Range") == "" && req.Header.Get("If-None-Match") == ""
}

// sentError marks a transport error after the request (or a replay of it)
// was written: its outcome is unknown.
type sentError struct{ error }

func (e *sentError) Unwrap() error { return e.error }

// notSent reports whether err proves that the request never reached a node.
func notSent(err error) bool {
	var se *sentError
	if errors.As(err, &se) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// retryAfter parses Retry-After (seconds or HTTP date).
func retryAfter(h http.Header) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(n, 0)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, true
}

// drain discards a little of the body so the connection can be reused.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}
