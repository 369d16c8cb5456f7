// Package api holds the conventions every handler of mure's client API
// shares: the JSON error envelope and its codes, JSON answers, and the
// bearer-token check. See docs/api.md.
package api
