// Package authhttp is the security model on the client API: the Guard
// middleware that authenticates every request (bearer tokens; HTTP Basic
// with a password or an access key, over TLS or from loopback only),
// slows down password guessing, authorizes by the caller's role, answers
// 401/403 as JSON saying what is missing, and writes admin actions to the
// audit log; and the /auth/ endpoints that manage users, tokens and keys.
// The model itself is package auth. See docs/security.md.
package authhttp
