package cache

import "strings"

// Why a response is not stored: the reasons name Cache-Status's detail.
const (
	ReasonMethod       = "method"
	ReasonStatus       = "status"
	ReasonNoStore      = "no-store"
	ReasonPrivate      = "private"
	ReasonAuthorized   = "authorization"
	ReasonNoFreshness  = "no-freshness"
	ReasonVaryStar     = "vary-star"
	ReasonRange        = "range"
	ReasonMustUnderstd = "must-understand"
)

// understood are the status codes whose semantics this cache knows, so
// that a response with must-understand may be stored (RFC 9111 §5.2.2.3).
func understood(code int) bool {
	switch code {
	case 200, 203, 204, 300, 301, 302, 303, 307, 308, 400, 403, 404, 405, 410, 414, 501:
		return true
	}
	return false
}

// Storable reports whether a shared cache may store the response to a
// request (RFC 9111 §3), and if not, why. reqHeader is the client's
// request; only GET responses are stored.
func (p Policy) Storable(method string, reqHeader Header, status int, respHeader Header) (bool, string) {
	if method != "GET" {
		return false, ReasonMethod
	}
	if status < 200 || status == 206 || status == 304 || status > 599 {
		return false, ReasonStatus
	}
	if has(reqHeader, "Range") {
		return false, ReasonRange
	}
	req := ParseDirectives(reqHeader, "Cache-Control")
	cc := ParseDirectives(respHeader, "Cache-Control")
	ctl := p.controlOf(respHeader, cc)
	if cc.MustUnderstand && !understood(status) {
		return false, ReasonMustUnderstd
	}
	noStore := (cc.NoStore || ctl.NoStore) && !(cc.MustUnderstand && understood(status))
	if req.NoStore || noStore {
		return false, ReasonNoStore
	}
	if (cc.Private && len(cc.PrivateFields) == 0) || (ctl.Private && len(ctl.PrivateFields) == 0) {
		return false, ReasonPrivate
	}
	if has(reqHeader, "Authorization") && !(cc.MustRevalidate || cc.Public || cc.SMaxAge != nil) {
		return false, ReasonAuthorized
	}
	for _, v := range list(respHeader, "Vary") {
		if strings.TrimSpace(v) == "*" {
			return false, ReasonVaryStar
		}
	}
	explicit := cc.Public || cc.MaxAge != nil || cc.SMaxAge != nil || cc.BadMaxAge || cc.BadSMaxAge ||
		has(respHeader, "Expires") || ctl.MaxAge != nil || ctl.SMaxAge != nil
	if !explicit && !HeuristicStatus(status) {
		return false, ReasonNoFreshness
	}
	if !explicit && !has(respHeader, "ETag") && !has(respHeader, "Last-Modified") {
		// Heuristically cacheable but without lifetime or validator: it
		// could only ever be fetched again whole.
		return false, ReasonNoFreshness
	}
	return true, ""
}

// StoredHeader is the header to store: hop-by-hop fields, those a
// qualified private or no-cache names, and fields the cache recomputes
// dropped (RFC 9111 §3.1).
func (p Policy) StoredHeader(h Header) Header {
	out := Clone(h)
	for _, f := range hopByHop(h) {
		delete(out, f)
	}
	cc := ParseDirectives(h, "Cache-Control")
	for _, f := range cc.PrivateFields {
		delete(out, f)
	}
	return out
}

// hopByHop lists the connection-specific fields of h (RFC 9110 §7.6.1).
func hopByHop(h Header) []string {
	fields := []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
		"Proxy-Authenticate", "Proxy-Authorization", "Proxy-Authentication-Info"}
	for _, f := range list(h, "Connection") {
		fields = append(fields, canonical(f))
	}
	return fields
}

// HopByHop lists the fields a proxy must not forward.
func HopByHop(h Header) []string { return hopByHop(h) }
