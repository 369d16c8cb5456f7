package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// memLimitRatio is the share of its cgroup's memory limit a node gives Go's
// collector as a soft limit (GOMEMLIMIT): the rest is for what the
// collector does not count (stacks of threads in system calls, the page
// cache the kernel charges to the group).
const memLimitRatio = 0.9

// setMemoryLimit makes the garbage collector work harder as the node nears
// the memory limit of the cgroup it runs in (a container, a systemd unit,
// a testbed host) rather than let the kernel kill it there: Go sizes its
// heap from the live heap alone and knows nothing of the group's limit.
// GOMEMLIMIT, when set, wins; AUTOMEMLIMIT=off turns this off. The limit
// is read again every minute, for groups whose limit changes.
func setMemoryLimit(ctx context.Context, log *slog.Logger) int64 {
	limit, err := memlimit.Set(
		memlimit.WithRatio(memLimitRatio),
		memlimit.WithProvider(memlimit.FromCgroup),
		memlimit.WithRefreshInterval(ctx, time.Minute),
		memlimit.WithLogger(log.With("component", "memlimit")),
	)
	if err != nil {
		// Not in a cgroup this can read (another OS, no cgroup mount):
		// the collector keeps Go's defaults.
		log.Debug("no memory limit for the collector", "err", err)
	}
	return limit
}
