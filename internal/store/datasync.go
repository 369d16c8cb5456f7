package store

import "os"

// Datasync makes f's content durable: fdatasync(2) for a file of the
// operating system — its data, and its size when that changed (needed to
// read the data back), but not its times — and Sync for any other File
// (the crash seam's files model exactly that: content and size as of the
// call). On an append that grows the file it costs about what fsync
// does; on a write into blocks already written and synced it writes the
// data alone (the raft log writes zeros ahead of its appends for that).
func Datasync(f File) error {
	if of, ok := f.(*os.File); ok {
		return fdatasync(of)
	}
	return f.Sync()
}
