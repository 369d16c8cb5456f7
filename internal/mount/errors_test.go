package mount

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/mure-dev/mure/client"
)

// What programs see for each failure of the cluster.
func TestErrno(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, c := range []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"none", nil, 0},
		{"not found", fmt.Errorf("stat a: %w", client.ErrNotFound), syscall.ENOENT},
		{"forbidden", client.ErrForbidden, syscall.EACCES},
		{"unauthorized", client.ErrUnauthorized, syscall.EACCES},
		{"exists", client.ErrPreconditionFailed, syscall.EEXIST},
		{"too large", client.ErrTooLarge, syscall.EFBIG},
		{"cluster full", &client.APIError{Status: 507, Code: "no_space"}, syscall.ENOSPC},
		{"spool full", &os.PathError{Op: "write", Err: syscall.ENOSPC}, syscall.ENOSPC},
		{"bad path", &client.APIError{Status: 400, Code: "bad_path"}, syscall.EINVAL},
		{"refused connection", refused, syscall.EIO},
		{"no quorum", &client.APIError{Status: 503, Code: "no_quorum"}, syscall.EIO},
		{"interrupted", context.Canceled, syscall.EINTR},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := errno(c.err); got != c.want {
				t.Fatalf("errno(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}
