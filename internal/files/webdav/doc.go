// Package webdav is the WebDAV face of the file service: x/net/webdav's
// protocol on a node's own listener (mure serve --webdav ADDR) over a
// webdav.FileSystem that calls the file API with forwarding, so any node
// answers any request (decision 0011). The flat namespace is shown as a
// tree of folders (FS documents the rule for keys that are not a tree).
// Locks are records of the replicated state (the namespace "webdav",
// LockPart), so a lock taken through one node holds on every other
// (decision 0026). Callers authenticate through the node's guard: HTTP
// Basic with a user's password or an access key (over TLS or from
// loopback only), or a bearer token (decision 0015).
package webdav
