package cache

import (
	"strconv"
	"strings"
	"time"
)

// Stored is what a cache keeps of a response besides its body: the
// status, the header as stored, and when the request that fetched it was
// sent and its response received (RFC 9111 §4.2.3).
type Stored struct {
	Status       int
	Header       Header
	RequestTime  time.Time
	ResponseTime time.Time
}

// Policy holds the cache's own choices where RFC 9111 leaves them open.
type Policy struct {
	// Heuristic allows heuristic freshness (§4.2.2) for responses
	// without an explicit lifetime that carry Last-Modified: 10% of the
	// time since the last modification. On by default, as the RFC permits.
	Heuristic bool
	// HeuristicMax caps a heuristic lifetime (0: 24 h).
	HeuristicMax time.Duration
	// CDN makes CDN-Cache-Control (RFC 9213) the response's freshness
	// field when present: this cache is a CDN in the sense of that RFC.
	CDN bool
}

// DefaultPolicy is heuristic freshness on, capped at a day, and
// CDN-Cache-Control honoured.
func DefaultPolicy() Policy { return Policy{Heuristic: true, HeuristicMax: 24 * time.Hour, CDN: true} }

// httpDate layouts a recipient must accept (RFC 9110 §5.6.7).
var httpDate = []string{
	"Mon, 02 Jan 2006 15:04:05 GMT",
	"Monday, 02-Jan-06 15:04:05 GMT",
	"Mon Jan _2 15:04:05 2006",
}

// ParseDate parses an HTTP-date; ok is false for anything else.
func ParseDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range httpDate {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// FormatDate writes t as an IMF-fixdate.
func FormatDate(t time.Time) string { return t.UTC().Format(httpDate[0]) }

// dateOf returns the response's Date, or its response time when Date is
// missing or invalid (RFC 9110 §6.6.1: a recipient may use its receipt time).
func (s *Stored) dateOf() time.Time {
	if d, ok := ParseDate(get(s.Header, "Date")); ok {
		return d
	}
	return s.ResponseTime
}

// ageValue is the Age field; ok is false when it is malformed: not one
// line of one non-negative integer (several values, a fraction, a sign,
// a parameter). A malformed Age makes the response stale, as the
// conformance suite asks: an upstream cache whose age cannot be read may
// have held the response for any time.
func ageValue(h Header) (time.Duration, bool) {
	lines := h[canonical("Age")]
	if len(lines) == 0 {
		return 0, true
	}
	if len(lines) > 1 || strings.Contains(lines[0], ",") {
		return 0, false
	}
	return parseDelta(strings.TrimSpace(lines[0]), true)
}

// Age is the stored response's current age at now (RFC 9111 §4.2.3).
func (s *Stored) Age(now time.Time) time.Duration {
	apparent := max(0, s.ResponseTime.Sub(s.dateOf()))
	delay := s.ResponseTime.Sub(s.RequestTime)
	av, ok := ageValue(s.Header)
	if !ok {
		return maxDelta
	}
	corrected := av + delay
	initial := max(apparent, corrected)
	return initial + max(0, now.Sub(s.ResponseTime))
}

// control is the directives that govern freshness for this cache:
// CDN-Cache-Control when the policy honours it and it is present and
// parses to something, else Cache-Control.
func (p Policy) control(h Header) Directives {
	return p.controlOf(h, ParseDirectives(h, "Cache-Control"))
}

// controlOf is control given the response's Cache-Control already parsed
// (cc), which Decide needs too: parsed once, not once per use.
func (p Policy) controlOf(h Header, cc Directives) Directives {
	if p.CDN {
		if d := ParseDirectives(h, "CDN-Cache-Control"); d.Present && len(list(h, "CDN-Cache-Control")) > 0 {
			return d
		}
	}
	return cc
}

// Lifetime is the stored response's freshness lifetime for a shared cache
// (§4.2.1) and whether it was explicit (heuristic otherwise, §4.2.2).
func (p Policy) Lifetime(s *Stored) (time.Duration, bool) {
	return p.lifetime(s, p.control(s.Header))
}

// lifetime is Lifetime given the directives that govern it (control).
func (p Policy) lifetime(s *Stored, cc Directives) (time.Duration, bool) {
	switch {
	case cc.BadSMaxAge:
		return 0, true
	case cc.SMaxAge != nil:
		return *cc.SMaxAge, true
	case cc.BadMaxAge:
		return 0, true
	case cc.MaxAge != nil:
		return *cc.MaxAge, true
	}
	if exp := s.Header[canonical("Expires")]; len(exp) > 0 {
		e, ok := ParseDate(exp[0])
		if !ok {
			return 0, true // an invalid Expires means already expired
		}
		return max(0, e.Sub(s.dateOf())), true
	}
	if !p.heuristicAllowed(s, cc) {
		return 0, false
	}
	lm, ok := ParseDate(get(s.Header, "Last-Modified"))
	if !ok {
		return 0, false
	}
	life := max(0, s.dateOf().Sub(lm)) / 10
	limit := p.HeuristicMax
	if limit <= 0 {
		limit = 24 * time.Hour
	}
	return min(life, limit), false
}

// heuristicAllowed: the setting is on and the status is heuristically
// cacheable (RFC 9110 §15.1) or the response is marked public.
func (p Policy) heuristicAllowed(s *Stored, cc Directives) bool {
	return p.Heuristic && (HeuristicStatus(s.Status) || cc.Public)
}

// HeuristicStatus reports whether a status is cacheable by default (RFC
// 9110 §15.1).
func HeuristicStatus(code int) bool {
	switch code {
	case 200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501:
		return true
	}
	return false
}

// Freshness is a stored response's state at one moment.
type Freshness struct {
	Age, Lifetime time.Duration
	// Explicit is false for a heuristic (or absent) lifetime.
	Explicit bool
}

// TTL is the time left before the response becomes stale (negative once
// it is).
func (f Freshness) TTL() time.Duration { return f.Lifetime - f.Age }

// Fresh reports whether the response is fresh (age below lifetime).
func (f Freshness) Fresh() bool { return f.Age < f.Lifetime }

// Freshness returns the stored response's age and lifetime at now.
func (p Policy) Freshness(s *Stored, now time.Time) Freshness {
	return p.freshness(s, now, p.control(s.Header))
}

// freshness is Freshness given the directives that govern it (control).
func (p Policy) freshness(s *Stored, now time.Time, ctl Directives) Freshness {
	life, explicit := p.lifetime(s, ctl)
	return Freshness{Age: s.Age(now), Lifetime: life, Explicit: explicit}
}

// AgeHeader formats an age for the Age field (whole seconds).
func AgeHeader(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }
