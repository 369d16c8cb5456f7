package cache

import "net/url"

// Safe reports whether a method is safe (RFC 9110 §9.2.1): a request with
// any other method invalidates what the cache holds for its target.
func Safe(method string) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE":
		return true
	}
	return false
}

// Invalidated returns the URIs a response to an unsafe request makes the
// cache invalidate (RFC 9111 §4.4): the target and the same-origin
// Location and Content-Location, when the status is 2xx or 3xx. target is
// absolute; the result is absolute URIs.
func Invalidated(method string, target *url.URL, status int, respHeader Header) []string {
	if Safe(method) || status < 200 || status > 399 {
		return nil
	}
	out := []string{target.String()}
	for _, f := range []string{"Location", "Content-Location"} {
		v := get(respHeader, f)
		if v == "" {
			continue
		}
		u, err := target.Parse(v)
		if err != nil || u.Scheme != target.Scheme || u.Host != target.Host {
			continue
		}
		out = append(out, u.String())
	}
	return out
}
