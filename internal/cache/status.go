package cache

import (
	"strconv"
	"strings"
	"time"
)

// Forward reasons of Cache-Status (RFC 9211 §2.2).
const (
	FwdBypass   = "bypass"
	FwdMethod   = "method"
	FwdURIMiss  = "uri-miss"
	FwdVaryMiss = "vary-miss"
	FwdMiss     = "miss"
	FwdRequest  = "request"
	FwdStale    = "stale"
)

// Status is one Cache-Status entry (RFC 9211) for this cache.
type Status struct {
	// Hit is true when the response came from the cache without going
	// forward (a validated response is not a hit).
	Hit bool
	// Fwd names why the request went to the origin ("" on a hit).
	Fwd string
	// FwdStatus is the origin's status code on a forwarded request.
	FwdStatus int
	// TTL is the response's remaining freshness (when known).
	TTL       time.Duration
	HasTTL    bool
	Stored    bool
	Collapsed bool
	// Detail is free text (e.g. why the response was not stored).
	Detail string
}

// String formats the entry with the cache's name.
func (s Status) String(name string) string {
	var b strings.Builder
	b.WriteString(name)
	if s.Hit {
		b.WriteString("; hit")
	}
	if s.Fwd != "" {
		b.WriteString("; fwd=" + s.Fwd)
	}
	if s.FwdStatus != 0 {
		b.WriteString("; fwd-status=" + strconv.Itoa(s.FwdStatus))
	}
	if s.HasTTL {
		b.WriteString("; ttl=" + strconv.FormatInt(int64(s.TTL/time.Second), 10))
	}
	if s.Stored {
		b.WriteString("; stored")
	}
	if s.Collapsed {
		b.WriteString("; collapsed")
	}
	if s.Detail != "" {
		b.WriteString("; detail=" + s.Detail)
	}
	return b.String()
}
