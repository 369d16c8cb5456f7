package main

import (
	"flag"
	"time"

	"github.com/mure-dev/mure/internal/node"
)

// filesFlags declares the file service's flags of mure serve on fs.
func filesFlags(fs *flag.FlagSet, cfg *node.Config) {
	fs.Int64Var(&cfg.MaxBody, "max-body", 5<<30, "largest file accepted, in bytes")
	fs.Int64Var(&cfg.CacheBytes, "cache", 64<<20, "memory cache for small files, in bytes (0 disables)")
	fs.DurationVar(&cfg.ScrubPeriod, "scrub-period", 24*time.Hour, "read back every local replica to check its checksum once per this period (0 disables the scrub)")
	fs.Int64Var(&cfg.ScrubRate, "scrub-rate", 64<<20, "cap on the scrub's disk reading, in bytes per second (0: no cap)")
}
