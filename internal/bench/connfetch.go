package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/mure-dev/mure/client"
)

// maxHops bounds the connections of one conn-rate request: the first and
// up to 3 redirects (a front door redirects once).
const maxHops = 4

// errRedirectLoop: a redirect went back to a URL already visited, or the
// request was redirected more than maxHops-1 times.
var errRedirectLoop = errors.New("redirect loop")

// errEmptyBody: a 200 answer without a body, where any non-empty one was
// expected.
var errEmptyBody = errors.New("empty body")

// fetcher GETs one URL, each time over new connections: no keep-alive, so
// that every request is a new connection for the front door to schedule,
// as with httperf's one call per connection in the paper.
type fetcher struct {
	url       string
	length    int64  // expected body length, 0: any but empty
	sum       string // expected SHA-256 (hex), "": not checked
	transport *http.Transport
}

func newFetcher(url string, length int64, sum string) *fetcher {
	t := &http.Transport{
		// no proxy: the load goes straight to the front door
		DialContext:        (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: -1}).DialContext,
		DisableKeepAlives:  true,
		DisableCompression: true, // measure the page as served
	}
	return &fetcher{url: url, length: length, sum: sum, transport: t}
}

func (f *fetcher) close() { f.transport.CloseIdleConnections() }

// fetch GETs the URL, following redirects (307, 302, ...: each hop a new
// connection), reads the whole body and checks it: status 200 and the
// expected length, or any non-empty body when none is expected. It returns
// the body's length and, on success, the request's times.
func (f *fetcher) fetch(ctx context.Context) (int64, fetchTimes, error) {
	var ft fetchTimes
	var first time.Time // the first hop's connect started
	url := f.url
	visited := map[string]bool{}
	for hop := 0; ; hop++ {
		if visited[url] || hop == maxHops {
			return 0, ft, fmt.Errorf("GET %s: %w after %d redirects", f.url, errRedirectLoop, hop)
		}
		visited[url] = true
		tr := &hopTrace{}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, tr.clientTrace()), http.MethodGet, url, nil)
		if err != nil {
			return 0, ft, err
		}
		resp, err := f.transport.RoundTrip(req)
		if err != nil {
			return 0, ft, fmt.Errorf("GET %s: %w", url, err)
		}
		if hop == 0 {
			if first = tr.firstConnect(); first.IsZero() {
				first = tr.start // no connect seen: from the request's start
			}
		}
		ft.connect += tr.connectTime()
		if isRedirect(resp.StatusCode) && resp.Header.Get("Location") != "" {
			loc, err := resp.Location()
			drain(resp)
			if err != nil {
				return 0, ft, fmt.Errorf("GET %s: bad redirect: %w", url, err)
			}
			url = loc.String()
			ft.redirects++
			continue
		}
		n, err := f.readBody(resp, url)
		done := time.Now()
		if err != nil {
			return n, ft, err
		}
		ft.reply = tr.replyTime()
		ft.connection = done.Sub(first)
		ft.host = req.URL.Host
		return n, ft, nil
	}
}

// readBody reads a final answer to its end and checks it.
func (f *fetcher) readBody(resp *http.Response, url string) (int64, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return 0, &client.APIError{Status: resp.StatusCode, Node: resp.Request.URL.Host, Message: string(msg)}
	}
	var w io.Writer = io.Discard
	h := sha256.New()
	if f.sum != "" {
		w = h
	}
	n, err := io.Copy(w, resp.Body)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) && resp.ContentLength >= 0:
		return n, &LengthError{Path: url, Got: n, Want: resp.ContentLength}
	case err != nil:
		return n, fmt.Errorf("GET %s: body: %w", url, err)
	case f.length > 0 && n != f.length:
		return n, &LengthError{Path: url, Got: n, Want: f.length}
	case n == 0 && f.length == 0:
		return 0, fmt.Errorf("GET %s: %w", url, errEmptyBody)
	case f.sum != "" && hex.EncodeToString(h.Sum(nil)) != f.sum:
		return n, &ContentError{Path: url, Got: hex.EncodeToString(h.Sum(nil)), Want: f.sum}
	}
	return n, nil
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// drain reads a little of a body before closing it (the connection is
// closed anyway: no keep-alive).
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}

// hopTrace records the times of one hop. The transport calls its hooks
// from its own goroutines (dialer, writer, reader), hence the lock.
type hopTrace struct {
	mu               sync.Mutex
	start            time.Time // the hop's request was created
	connStart        map[string]time.Time
	firstConn        time.Time
	connected        time.Duration // over the successful connects
	wrote, firstByte time.Time
}

func (h *hopTrace) clientTrace() *httptrace.ClientTrace {
	h.start = time.Now()
	h.connStart = map[string]time.Time{}
	return &httptrace.ClientTrace{
		ConnectStart: func(network, addr string) {
			now := time.Now()
			h.mu.Lock()
			defer h.mu.Unlock()
			h.connStart[addr] = now
			if h.firstConn.IsZero() {
				h.firstConn = now
			}
		},
		ConnectDone: func(network, addr string, err error) {
			now := time.Now()
			h.mu.Lock()
			defer h.mu.Unlock()
			if s, ok := h.connStart[addr]; ok && err == nil {
				h.connected += now.Sub(s)
			}
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			now := time.Now()
			h.mu.Lock()
			defer h.mu.Unlock()
			h.wrote = now
		},
		GotFirstResponseByte: func() {
			now := time.Now()
			h.mu.Lock()
			defer h.mu.Unlock()
			h.firstByte = now
		},
	}
}

// firstConnect is when the hop's first connect started (zero if none).
func (h *hopTrace) firstConnect() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.firstConn
}

func (h *hopTrace) connectTime() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.connected
}

// replyTime is from the request written to the reply's first byte (0 when
// the server answered before the request was written out).
func (h *hopTrace) replyTime() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.wrote.IsZero() || h.firstByte.IsZero() {
		return 0
	}
	return max(h.firstByte.Sub(h.wrote), 0)
}
