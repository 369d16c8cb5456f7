// Package cache is the semantics of a shared HTTP cache (RFC 9111) as pure
// functions over header maps and times: whether a response may be stored,
// its freshness lifetime and age, whether a stored response may answer a
// request (fresh, stale and allowed, or to be validated), the conditional
// request that validates it and the merge of a 304 into it, the secondary
// key of Vary, invalidation by unsafe methods, CDN-Cache-Control (RFC 9213)
// and the Cache-Status header (RFC 9211).
//
// It does no I/O and imports no net/http: the tiers that hold objects
// (cache/tier) and the proxy that speaks HTTP (cache/proxy) call it, so
// every rule is tested here against tables.
package cache
