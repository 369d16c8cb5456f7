//go:build !linux

package store

import (
	"errors"
	"os"
)

// On other systems the directory is not locked and DiskFree is unsupported;
// mure only runs on Linux, this keeps the package compiling elsewhere.

func lockDir(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
}

func statfs(string) (free, total uint64, err error) {
	return 0, 0, errors.New("statfs not supported on this platform")
}

func fdatasync(f *os.File) error { return f.Sync() }
