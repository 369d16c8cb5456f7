// Package mount is `mure mount`: the cluster as a directory through FUSE
// (github.com/hanwen/go-fuse/v2), a client of the native HTTP API like
// any other, as a user with a token. Folders over the flat namespace follow
// the WebDAV face's rule (docs/access.md, "Folders"): a folder exists while
// a key lies below it, mkdir writes a marker, the folder wins over a file
// of the same name. Consistency is close-to-open: an open sees every
// version closed before it anywhere in the cluster (the kernel keeps the
// page cache only while the version is unchanged), and a write becomes
// visible to others when its file is closed (or fsynced). Written files
// are spooled to a temporary file, not memory, and streamed to the cluster
// at close.
package mount
