package mount

import (
	"context"
	"errors"
	"syscall"

	"github.com/mure-dev/mure/client"
)

// errno maps an error of the cluster to what a program sees: a missing
// file ENOENT, a refusal EACCES, a full disk ENOSPC, a lost node or any
// other failure (a refused connection included: programs know EIO, not
// ECONNREFUSED, from a file) EIO.
func errno(err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, syscall.ENOSPC): // the spool's disk
		return syscall.ENOSPC
	case errors.Is(err, client.ErrNotFound):
		return syscall.ENOENT
	case errors.Is(err, client.ErrForbidden), errors.Is(err, client.ErrUnauthorized):
		return syscall.EACCES
	case errors.Is(err, client.ErrPreconditionFailed):
		return syscall.EEXIST
	case errors.Is(err, client.ErrTooLarge):
		return syscall.EFBIG
	case errors.Is(err, context.Canceled):
		return syscall.EINTR
	}
	var ae *client.APIError
	if errors.As(err, &ae) {
		switch ae.Code {
		case "no_space":
			return syscall.ENOSPC
		case "bad_path":
			return syscall.EINVAL
		}
	}
	return syscall.EIO
}
