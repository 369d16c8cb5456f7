//go:build !linux

package apps

import (
	"errors"
	"sync/atomic"
)

// canStop: without /proc the reaper cannot find a run's processes, so
// CGITimeout is not enforced (New warns).
const canStop = false

func killMarked(func(tag string) *atomic.Int64) error {
	return errors.New("finding a CGI run's processes needs Linux's /proc: --cgi-timeout is not enforced here")
}
