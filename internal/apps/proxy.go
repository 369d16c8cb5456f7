package apps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/api"
)

// Proxy is an app served by reverse proxy: requests under Prefix go to
// Target with the prefix stripped (/shop/x → Target/x).
type Proxy struct {
	// Prefix is a path that starts and ends with '/', e.g. "/shop/".
	Prefix string
	// Target is the app's base URL (http or https), e.g.
	// http://127.0.0.1:9000 or http://127.0.0.1:9000/base/.
	Target *url.URL
}

// Name is the app's name in metrics and logs: its prefix without the
// outer slashes ("/shop/" → "shop").
func (p Proxy) Name() string { return strings.Trim(p.Prefix, "/") }

// reserved are the first path segments of the node's own routes; an app
// prefix may not start with one.
var reserved = []string{"files", "status", "healthz", "readyz", "metrics", "config", "nodes", "debug", "list", "cgi", "peer", "sessions", "attach", "web", "cache"}

// ParseProxy parses the flag form PREFIX=URL, e.g.
// "/shop/=http://127.0.0.1:9000".
func ParseProxy(s string) (Proxy, error) {
	prefix, target, ok := strings.Cut(s, "=")
	if !ok {
		return Proxy{}, fmt.Errorf("want PREFIX=URL (e.g. /shop/=http://127.0.0.1:9000), got %q", s)
	}
	u, err := url.Parse(target)
	if err != nil {
		return Proxy{}, fmt.Errorf("app %s: target %q: %w", prefix, target, err)
	}
	p := Proxy{Prefix: prefix, Target: u}
	if err := p.validate(); err != nil {
		return Proxy{}, fmt.Errorf("app %s=%s: %w", prefix, target, err)
	}
	return p, nil
}

func (p Proxy) validate() error {
	if len(p.Prefix) < 3 || p.Prefix[0] != '/' || p.Prefix[len(p.Prefix)-1] != '/' {
		return errors.New("the prefix must start and end with '/' and name a path, e.g. /shop/")
	}
	segs := strings.Split(p.Prefix[1:len(p.Prefix)-1], "/")
	for _, seg := range segs {
		if seg == "" || seg == "." || seg == ".." || strings.Trim(seg, prefixChars) != "" {
			return fmt.Errorf("the prefix's segments must be non-empty and use only letters, digits and . _ ~ - (not %q)", seg)
		}
	}
	for _, r := range reserved {
		if segs[0] == r {
			return fmt.Errorf("the prefix /%s/ belongs to the node's own API; pick another", r)
		}
	}
	switch {
	case p.Target == nil:
		return errors.New("no target URL")
	case p.Target.Scheme != "http" && p.Target.Scheme != "https":
		return fmt.Errorf("the target must be an http:// or https:// URL, not %q", p.Target.String())
	case p.Target.Host == "":
		return errors.New("the target URL has no host (want e.g. http://127.0.0.1:9000)")
	case p.Target.User != nil, p.Target.RawQuery != "", p.Target.Fragment != "":
		return errors.New("the target URL may not carry user info, a query or a fragment")
	}
	return nil
}

const prefixChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~-"

// idleConnsPerApp keeps enough keep-alive connections to an app for the
// node's default --max-inflight (256) requests at once; with net/http's
// default of 2, a loaded node would open and close a connection per
// request and run out of ephemeral ports.
const idleConnsPerApp = 256

// dialTimeout is how long connecting to an app may take: apps run on the
// node's host or next to it, so a slow dial means a dead app.
const dialTimeout = 5 * time.Second

// proxy serves one Proxy.
type proxy struct {
	cfg       Proxy
	name      string
	rp        *httputil.ReverseProxy
	transport *http.Transport
	a         *Apps
}

func (a *Apps) newProxy(p Proxy) *proxy {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = idleConnsPerApp
	t.MaxIdleConns = 0 // no global cap; per host is the bound
	t.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	px := &proxy{cfg: p, name: p.Name(), transport: t, a: a}
	px.rp = &httputil.ReverseProxy{
		Rewrite:      px.rewrite,
		Transport:    t,
		ErrorHandler: px.fail,
		ErrorLog:     slog.NewLogLogger(a.log.With("app", px.name).Handler(), slog.LevelWarn),
	}
	return px
}

func (px *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	px.a.m.serve(px.name, w, r, px.rp)
}

// rewrite strips the prefix, points the request at the target and sets
// the X-Forwarded headers. ReverseProxy drops the client's before
// Rewrite; X-Forwarded-For alone is carried over and extended, as nginx's
// $proxy_add_x_forwarded_for does, so an app behind a front door sees
// the chain (only its last entry, the address mure saw, is vouched for).
func (px *proxy) rewrite(pr *httputil.ProxyRequest) {
	u := pr.Out.URL
	u.Path = "/" + strings.TrimPrefix(u.Path, px.cfg.Prefix)
	if u.RawPath != "" {
		// The prefix holds only unreserved characters: escaped as is.
		u.RawPath = "/" + strings.TrimPrefix(u.RawPath, px.cfg.Prefix)
	}
	pr.SetURL(px.cfg.Target)
	if xff := pr.In.Header["X-Forwarded-For"]; xff != nil {
		pr.Out.Header["X-Forwarded-For"] = slices.Clone(xff)
	}
	pr.SetXForwarded()
	pr.Out.Header.Set("X-Forwarded-Prefix", strings.TrimSuffix(px.cfg.Prefix, "/"))
	stripToken(pr.Out.Header, px.a.cfg.Token)
}

// stripToken removes the node's own bearer token from h.
func stripToken(h http.Header, token string) {
	if token != "" && h.Get("Authorization") == "Bearer "+token {
		h.Del("Authorization")
	}
}

// fail answers a request the app did not: 502, or 504 on a timeout,
// with what the operator needs to fix it.
func (px *proxy) fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client left; nobody to answer
	}
	status, code, what := http.StatusBadGateway, api.CodeBadGateway, "could not be reached or failed"
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		status, code, what = http.StatusGatewayTimeout, api.CodeGatewayTimeout, "did not answer in time"
	}
	px.a.log.Warn("app unreachable", "app", px.name, "target", px.cfg.Target.String(), "err", err)
	api.Error(w, status, code, fmt.Sprintf("app %s (%s, at %s) %s: %v; is it running and listening there?",
		px.name, px.cfg.Prefix, px.cfg.Target, what, err))
}
