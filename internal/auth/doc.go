// Package auth is mure's security model: users with password hashes,
// their roles (admin, or read-write and read-only grants per path prefix),
// named expiring bearer tokens stored as hashes, and access keys whose
// secrets are sealed with a key derived from the cluster key. The records
// live in the replicated state as the "auth" namespace (Part); the
// Authenticator checks credentials against them and Principal.Allowed
// decides what a caller may do. Nothing here speaks HTTP: the client API's
// middleware is in auth/authhttp. See docs/security.md and
// docs/decisions/0015-security-model.md.
package auth
