// Package api holds the conventions every handler of mure's client API
// shares: the JSON error envelope and its codes and JSON answers. See
// docs/api.md; authentication is internal/auth/authhttp.
package api
