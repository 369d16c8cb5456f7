package cache

import (
	"strings"
	"time"
)

// Conditional returns the validators to send to the origin to validate a
// stored response: If-None-Match from its ETag, If-Modified-Since from
// its Last-Modified (RFC 9111 §4.3.1). Empty when it has neither.
func Conditional(stored Header) Header {
	h := Header{}
	if et := get(stored, "ETag"); et != "" {
		h["If-None-Match"] = []string{et}
	}
	if lm := get(stored, "Last-Modified"); lm != "" {
		h["If-Modified-Since"] = []string{lm}
	}
	return h
}

// HasValidator reports whether a stored response can be validated.
func HasValidator(stored Header) bool {
	return get(stored, "ETag") != "" || get(stored, "Last-Modified") != ""
}

// notUpdated are the fields a 304 does not change in the stored response
// (RFC 9111 §3.2: Content-Length, and the fields that describe the stored
// content itself).
var notUpdated = map[string]bool{
	"Content-Length": true, "Content-Encoding": true, "Content-Range": true, "Content-Md5": true, "Etag": true,
}

// Update merges a 304's header into a stored response (RFC 9111 §3.2,
// §4.3.4) and takes its times: the stored response is then as fresh as
// the 304 says.
func (p Policy) Update(s *Stored, notModified Header, reqTime, respTime time.Time) {
	h := Clone(s.Header)
	skip := map[string]bool{}
	for _, f := range hopByHop(notModified) {
		skip[f] = true
	}
	for k, v := range notModified {
		if notUpdated[k] || skip[k] {
			continue
		}
		h[k] = append([]string(nil), v...)
	}
	s.Header, s.RequestTime, s.ResponseTime = h, reqTime, respTime
}

// NotModified evaluates a client's conditional GET or HEAD against a
// stored response (RFC 9110 §13.2.2): true when a 304 answers it.
// If-None-Match takes precedence over If-Modified-Since.
func NotModified(reqHeader, stored Header) bool {
	if inm := list(reqHeader, "If-None-Match"); len(inm) > 0 {
		et := get(stored, "ETag")
		for _, tag := range inm {
			if tag == "*" || (et != "" && weakMatch(tag, et)) {
				return true
			}
		}
		return false
	}
	ims, ok := ParseDate(get(reqHeader, "If-Modified-Since"))
	if !ok {
		return false
	}
	lm, ok := ParseDate(get(stored, "Last-Modified"))
	if !ok {
		lm, ok = ParseDate(get(stored, "Date"))
	}
	return ok && !lm.After(ims)
}

// weakMatch compares entity tags ignoring the weak prefix.
func weakMatch(a, b string) bool {
	return strings.TrimPrefix(a, "W/") == strings.TrimPrefix(b, "W/")
}
