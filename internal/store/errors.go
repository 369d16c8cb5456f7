package store

import (
	"errors"
	"fmt"
	"syscall"
)

// Sentinel errors. Errors returned by the package wrap these, so callers
// must test with errors.Is.
var (
	ErrNotFound = errors.New("store: blob not found")
	ErrNoSpace  = errors.New("store: no space left on device")
	ErrChecksum = errors.New("store: checksum mismatch")
	ErrBadID    = errors.New("store: invalid blob id")
	ErrClosed   = errors.New("store: closed")
)

// errWriterDone is returned by a Writer used after Commit or Abort.
var errWriterDone = errors.New("store: writer already committed or aborted")

// isNoSpace reports whether err is the kernel telling us the disk (or the
// quota) is full.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// wrapErr adds context to err: "store: <op> <path>[/<id>]: err". Disk-full
// errors additionally wrap ErrNoSpace; the original error stays in the chain
// too, so errors.Is(err, syscall.ENOSPC) also holds.
func wrapErr(op, path, id string, err error) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf("%q", path)
	if id != "" {
		what += "/" + id
	}
	if isNoSpace(err) && !errors.Is(err, ErrNoSpace) {
		return fmt.Errorf("store: %s %s: %w: %w", op, what, ErrNoSpace, err)
	}
	return fmt.Errorf("store: %s %s: %w", op, what, err)
}

// notFound builds the error returned for an absent blob.
func notFound(op, path, id string) error {
	return fmt.Errorf("store: %s %q/%s: %w", op, path, id, ErrNotFound)
}
