// Package proxy is the caching reverse proxy of a node (`mure serve
// --proxy ADDR --proxy-origin URL`): its own listener, the origins it
// serves by Host or path prefix (a request for any other Host is refused:
// no open proxy), RFC 9111's rules from package cache applied to every
// request, objects kept in package tier's memory and disk tiers, and
// concurrent misses for one object collapsed into one origin fetch.
package proxy
