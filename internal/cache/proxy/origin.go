package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Origin is a site the proxy serves: requests whose Host (and path
// prefix) match go to URL.
type Origin struct {
	// Host is the request Host this origin answers (no port; "" : the
	// default origin, which answers requests addressed to the proxy
	// itself by IP address or as localhost, and the origin's own host name).
	Host string
	// Prefix, when set, limits the origin to paths under it ("/static/");
	// the prefix is kept in the path sent to the origin.
	Prefix string
	// URL is the origin: scheme, host and an optional base path.
	URL *url.URL
}

// ParseOrigin reads --proxy-origin: "URL" (the default origin),
// "HOST=URL", "/PREFIX/=URL" or "HOST/PREFIX/=URL".
func ParseOrigin(s string) (Origin, error) {
	var o Origin
	target := s
	if i := strings.Index(s, "="); i >= 0 && !strings.Contains(s[:i], "://") {
		match := s[:i]
		target = s[i+1:]
		if j := strings.Index(match, "/"); j >= 0 {
			o.Host, o.Prefix = match[:j], match[j:]
		} else {
			o.Host = match
		}
		o.Host = strings.ToLower(o.Host)
		if o.Host == "" && o.Prefix == "" {
			return o, fmt.Errorf("--proxy-origin %q: nothing before '='", s)
		}
	}
	u, err := url.Parse(target)
	if err != nil {
		return o, fmt.Errorf("--proxy-origin %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return o, fmt.Errorf("--proxy-origin %q: the origin must be an http:// or https:// URL", s)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return o, fmt.Errorf("--proxy-origin %q: no query, fragment or user in the origin URL", s)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	o.URL = u
	return o, nil
}

// String is the form ParseOrigin reads.
func (o Origin) String() string {
	if o.Host == "" && o.Prefix == "" {
		return o.URL.String()
	}
	return o.Host + o.Prefix + "=" + o.URL.String()
}

// name is the origin's part of a cache key.
func (o Origin) name() string {
	h := o.Host
	if h == "" {
		h = "_"
	}
	return h + o.Prefix
}

// router picks the origin of a request.
type router struct{ origins []Origin }

func newRouter(origins []Origin) (*router, error) {
	if len(origins) == 0 {
		return nil, errors.New("proxy: no origin (--proxy-origin URL)")
	}
	seen := map[string]bool{}
	for _, o := range origins {
		if seen[o.name()] {
			return nil, fmt.Errorf("proxy: origin %s given twice", o.name())
		}
		seen[o.name()] = true
		if o.Prefix != "" && !strings.HasPrefix(o.Prefix, "/") {
			return nil, fmt.Errorf("proxy: prefix %q must start with /", o.Prefix)
		}
	}
	return &router{origins: origins}, nil
}

// route returns the origin for a Host and path, the longest prefix
// winning; nil when none answers (the request is refused).
func (r *router) route(host, path string) *Origin {
	name := strings.ToLower(host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = strings.ToLower(h)
	}
	name = strings.TrimSuffix(name, ".")
	var best *Origin
	for i := range r.origins {
		o := &r.origins[i]
		if !o.matchesHost(name) || !strings.HasPrefix(path, o.Prefix) {
			continue
		}
		if best == nil || len(o.Prefix) > len(best.Prefix) || (o.Host != "" && best.Host == "" && len(o.Prefix) == len(best.Prefix)) {
			best = o
		}
	}
	return best
}

func (o *Origin) matchesHost(name string) bool {
	if o.Host != "" {
		return name == o.Host
	}
	if name == "localhost" || name == strings.ToLower(o.URL.Hostname()) {
		return true
	}
	return net.ParseIP(strings.Trim(name, "[]")) != nil
}
