// Package filehttp is the native HTTP face of the file service: the
// client API's /files/{path} (GET, HEAD, PUT, DELETE), /list and
// /status/files/, and the fast read lane (fastlane.go). It parses
// requests into calls of the Go file API (package files) and maps the
// API's typed errors to statuses and JSON errors (internal/api); a
// *files.HeldElsewhereError becomes a 307 redirect unless the client asked
// for forwarding (X-Mure-Forward: 1). See docs/api.md.
package filehttp
