package client

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultNode is used when New is given no node.
const DefaultNode = "127.0.0.1:7946"

// maxRedirects is the number of redirects followed within one attempt.
const maxRedirects = 10

// Client talks to a mure cluster. It is safe for concurrent use.
type Client struct {
	nodes []string // base URLs, "http://host:port"
	token string
	// user and password: HTTP Basic, when no token is set.
	user, password string
	roots          *x509.CertPool // WithCA
	hc             *http.Client
	// readHC sends plain whole-file reads (plainRead): by default a pool of
	// connections of its own, so that reads after a write still reach a
	// node's front (see WithReadHTTPClient).
	readHC   *http.Client
	attempts int
	forward  bool
	log      *slog.Logger
	rr       atomic.Uint32
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends "Authorization: Bearer token" with every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient uses a copy of hc. Its CheckRedirect is replaced (the Client
// follows redirects itself) and an *http.Transport without
// ExpectContinueTimeout is cloned with a timeout of 5s.
// Reads go through the same hc unless WithReadHTTPClient is given too.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithReadHTTPClient sends plain whole-file reads (GET and HEAD of a file
// without a range, a condition or a query) through a copy of hc, treated
// as WithHTTPClient's. Give it a transport of its own: a node's
// front answers plain reads only on a connection that has carried nothing
// else (a connection that carried a write or a range stays with the full
// HTTP server; docs/decisions/0070-reads-on-their-own-connections.md). A
// client without WithHTTPClient does this by itself.
func WithReadHTTPClient(hc *http.Client) Option { return func(c *Client) { c.readHC = hc } }

// WithAttempts sets the total number of attempts of a request across nodes
// (default 6, with a backoff from 50 ms doubling up to 1 s between them:
// about 3 s in all); 1 disables retries.
func WithAttempts(n int) Option {
	return func(c *Client) {
		if n < 1 {
			n = 1
		}
		c.attempts = n
	}
}

// WithForwarding asks the nodes to do the work when another node must
// serve a file request (X-Mure-Forward: 1): a read is streamed from a node
// with a valid copy, a write handed to the holder of the write right,
// instead of a redirect. For clients that reach only one address (a
// front door, a proxy) or cannot follow redirects; it costs a hop inside
// the cluster. See docs/api.md, "Forwarding".
func WithForwarding() Option { return func(c *Client) { c.forward = true } }

// WithLogger logs redirects and retries at debug level.
func WithLogger(l *slog.Logger) Option { return func(c *Client) { c.log = l } }

// New returns a client of the given nodes, each "host:port" or
// "http://host:port". With no node it uses DefaultNode.
func New(nodes []string, opts ...Option) *Client {
	c := &Client{attempts: 6}
	for _, n := range nodes {
		n = strings.TrimRight(strings.TrimSpace(n), "/")
		if n == "" {
			continue
		}
		if !strings.Contains(n, "://") {
			n = "http://" + n
		}
		c.nodes = append(c.nodes, n)
	}
	if len(c.nodes) == 0 {
		c.nodes = []string{"http://" + DefaultNode}
	}
	for _, o := range opts {
		o(c)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.readHC != nil:
		c.readHC = c.httpClient(c.readHC)
	case c.hc == nil:
		c.readHC = c.httpClient(nil) // a pool of its own
	}
	c.hc = c.httpClient(c.hc)
	if c.readHC == nil {
		c.readHC = c.hc
	}
	return c
}

// httpClient is the copy of hc the client uses (httpClient), with the
// roots of WithCA.
func (c *Client) httpClient(hc *http.Client) *http.Client {
	hc = httpClient(hc)
	if t, ok := hc.Transport.(*http.Transport); ok && c.roots != nil {
		t = t.Clone()
		t.TLSClientConfig = &tls.Config{RootCAs: c.roots, MinVersion: tls.VersionTLS12}
		hc.Transport = t
	}
	return hc
}

func httpClient(hc *http.Client) *http.Client {
	var cp http.Client
	if hc != nil {
		cp = *hc
	}
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	switch t := cp.Transport.(type) {
	case nil:
		cp.Transport = defaultTransport()
	case *http.Transport:
		if t.ExpectContinueTimeout == 0 {
			t = t.Clone()
			t.ExpectContinueTimeout = 5 * time.Second
			cp.Transport = t
		}
	}
	return &cp
}

func defaultTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	t.DialContext = d.DialContext
	t.ExpectContinueTimeout = 5 * time.Second
	t.MaxIdleConnsPerHost = 16
	return t
}
