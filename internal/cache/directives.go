package cache

import (
	"strconv"
	"strings"
	"time"
)

// maxDelta is the largest delta-seconds value kept: RFC 9111 §1.2.2 says
// a larger one is taken as 2^31 seconds.
const maxDelta = time.Duration(1<<31) * time.Second

// Directives is a parsed Cache-Control (or CDN-Cache-Control) field. A
// directive given twice keeps its first value (RFC 9111 §4.2.1).
type Directives struct {
	// Present is true when the field was there at all.
	Present bool
	// MaxAge and SMaxAge are set when their directive was present; Bad*
	// marks a present directive whose value did not parse (the response
	// is then stale).
	MaxAge, SMaxAge       *time.Duration
	BadMaxAge, BadSMaxAge bool
	// MaxStale is set for the request directive; MaxStaleAny when it has
	// no value (any staleness is accepted).
	MaxStale    *time.Duration
	MaxStaleAny bool
	// MinFresh is the request directive.
	MinFresh *time.Duration
	// StaleWhileRevalidate and StaleIfError are RFC 5861's.
	StaleWhileRevalidate, StaleIfError *time.Duration
	NoStore, NoCache, Private, Public  bool
	// NoCacheFields and PrivateFields are the qualified forms' field
	// names (canonical); the directive is then set too.
	NoCacheFields, PrivateFields    []string
	MustRevalidate, ProxyRevalidate bool
	MustUnderstand, Immutable       bool
	OnlyIfCached, NoTransform       bool
}

// ParseDirectives parses every line of the named field in h.
func ParseDirectives(h Header, field string) Directives {
	var d Directives
	d.Present = has(h, field)
	seen := map[string]bool{}
	for _, member := range list(h, field) {
		name, value, hasValue := strings.Cut(member, "=")
		name = strings.ToLower(name)
		if strings.TrimSpace(name) != name {
			continue // "max-age =1": not a directive we know
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		d.set(name, value, hasValue)
	}
	return d
}

func (d *Directives) set(name, value string, hasValue bool) {
	delta := func(bad *bool) *time.Duration {
		v, ok := parseDelta(value, hasValue)
		if !ok {
			if bad != nil {
				*bad = true
			}
			return nil
		}
		return &v
	}
	switch name {
	case "max-age":
		d.MaxAge = delta(&d.BadMaxAge)
	case "s-maxage":
		d.SMaxAge = delta(&d.BadSMaxAge)
	case "max-stale":
		if !hasValue {
			d.MaxStaleAny = true
			return
		}
		d.MaxStale = delta(nil)
	case "min-fresh":
		d.MinFresh = delta(nil)
	case "stale-while-revalidate":
		d.StaleWhileRevalidate = delta(nil)
	case "stale-if-error":
		d.StaleIfError = delta(nil)
	case "no-store":
		d.NoStore = true
	case "no-cache":
		d.NoCache = true
		d.NoCacheFields = fieldNames(value, hasValue)
	case "private":
		d.Private = true
		d.PrivateFields = fieldNames(value, hasValue)
	case "public":
		d.Public = true
	case "must-revalidate":
		d.MustRevalidate = true
	case "proxy-revalidate":
		d.ProxyRevalidate = true
	case "must-understand":
		d.MustUnderstand = true
	case "immutable":
		d.Immutable = true
	case "only-if-cached":
		d.OnlyIfCached = true
	case "no-transform":
		d.NoTransform = true
	}
}

// parseDelta reads delta-seconds: digits only (a quoted string of digits
// is accepted, as RFC 9111 §5.2 asks of recipients), saturating at 2^31.
func parseDelta(v string, hasValue bool) (time.Duration, bool) {
	if !hasValue {
		return 0, false
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if v == "" {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > 1<<31 {
		return maxDelta, true
	}
	return time.Duration(n) * time.Second, true
}

// fieldNames reads the quoted list of a qualified no-cache or private.
func fieldNames(v string, hasValue bool) []string {
	if !hasValue {
		return nil
	}
	v = strings.Trim(v, `"`)
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, canonical(f))
		}
	}
	return out
}
