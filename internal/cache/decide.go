package cache

import (
	"strings"
	"time"
)

// Action is what to do with a stored response for a request.
type Action int

const (
	// Serve answers from the stored response without contacting the
	// origin (fresh, or stale where the request allows it).
	Serve Action = iota
	// ServeStale answers from the stale stored response and revalidates
	// it in the background (stale-while-revalidate).
	ServeStale
	// Validate sends a conditional request to the origin first.
	Validate
)

// Decision is the outcome of Decide.
type Decision struct {
	Action Action
	Freshness
	// Stale is true when the stored response is stale at the moment.
	Stale bool
	// Why names what forced validation: "request" (the request's
	// directives), "stale" (past its lifetime), "no-cache" (the
	// response's).
	Why string
}

// Decide judges a stored response against a request (RFC 9111 §4, §4.2.4,
// §5.2.1, RFC 5861): serve it, serve it stale and revalidate, or validate.
func (p Policy) Decide(reqHeader Header, s *Stored, now time.Time) Decision {
	cc := ParseDirectives(s.Header, "Cache-Control")
	ctl := p.controlOf(s.Header, cc)
	f := p.freshness(s, now, ctl)
	d := Decision{Freshness: f, Stale: !f.Fresh()}
	req := requestDirectives(reqHeader)
	switch {
	case req.NoCache:
		d.Action, d.Why = Validate, "request"
		return d
	case cc.NoCache || ctl.NoCache:
		d.Action, d.Why = Validate, "no-cache"
		return d
	case req.MaxAge != nil && f.Age > *req.MaxAge:
		d.Action, d.Why = Validate, "request"
		return d
	case req.MinFresh != nil && f.TTL() < *req.MinFresh:
		d.Action, d.Why = Validate, "request"
		return d
	}
	if f.Fresh() {
		d.Action = Serve
		return d
	}
	if mustRevalidate(cc, ctl) {
		d.Action, d.Why = Validate, "stale"
		return d
	}
	staleness := f.Age - f.Lifetime
	if req.MaxStaleAny || (req.MaxStale != nil && staleness <= *req.MaxStale) {
		d.Action = Serve
		return d
	}
	if swr := ctl.StaleWhileRevalidate; swr != nil && staleness <= *swr {
		d.Action = ServeStale
		return d
	}
	d.Action, d.Why = Validate, "stale"
	return d
}

// mustRevalidate: a shared cache may not serve the response stale
// (must-revalidate, proxy-revalidate, or s-maxage, §5.2.2.10).
func mustRevalidate(cc, ctl Directives) bool {
	return cc.MustRevalidate || cc.ProxyRevalidate || cc.SMaxAge != nil || ctl.MustRevalidate || ctl.SMaxAge != nil
}

// requestDirectives are the request's Cache-Control, or Pragma: no-cache
// when it has none (RFC 9111 §5.4 allows treating it so).
func requestDirectives(h Header) Directives {
	d := ParseDirectives(h, "Cache-Control")
	if !d.Present {
		for _, v := range list(h, "Pragma") {
			if strings.EqualFold(v, "no-cache") {
				d.NoCache = true
			}
		}
	}
	return d
}

// OnlyIfCached reports whether the request forbids contacting the origin.
func OnlyIfCached(reqHeader Header) bool { return requestDirectives(reqHeader).OnlyIfCached }

// NoStoreRequest reports whether the request forbids storing its response.
func NoStoreRequest(reqHeader Header) bool { return requestDirectives(reqHeader).NoStore }

// StaleIfError reports whether the stale stored response may answer in
// place of an origin error at now (RFC 5861 §4: the response's or the
// request's stale-if-error, never past must-revalidate).
func (p Policy) StaleIfError(reqHeader Header, s *Stored, now time.Time) bool {
	cc := ParseDirectives(s.Header, "Cache-Control")
	ctl := p.controlOf(s.Header, cc)
	f := p.freshness(s, now, ctl)
	if f.Fresh() {
		return true
	}
	if mustRevalidate(cc, ctl) || cc.NoCache || ctl.NoCache {
		return false
	}
	staleness := f.Age - f.Lifetime
	req := requestDirectives(reqHeader)
	for _, w := range []*time.Duration{ctl.StaleIfError, req.StaleIfError} {
		if w != nil && staleness <= *w {
			return true
		}
	}
	return false
}

// StaleWhenDisconnected reports whether a stale stored response may
// answer when the origin cannot be reached at all (RFC 9111 §4.2.4: a
// cache that is disconnected may serve stale unless the response forbids
// it with must-revalidate, proxy-revalidate, s-maxage or no-cache).
func (p Policy) StaleWhenDisconnected(s *Stored) bool {
	cc := ParseDirectives(s.Header, "Cache-Control")
	ctl := p.controlOf(s.Header, cc)
	return !mustRevalidate(cc, ctl) && !cc.NoCache && !ctl.NoCache
}
