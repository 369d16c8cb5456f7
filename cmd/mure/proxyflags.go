package main

import (
	"errors"
	"flag"
	"strconv"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/bytesize"
	"github.com/mure-dev/mure/internal/cache/proxy"
)

// proxyFlags declares the caching proxy's flags of mure serve on fs; the
// returned function gives the proxy's configuration after parsing (nil
// without --proxy).
func proxyFlags(fs *flag.FlagSet) func() *proxy.Config {
	var cfg proxy.Config
	var origins originList
	mem, disk, maxObj := sizeFlag(64<<20), sizeFlag(1<<30), sizeFlag(16<<20)
	heuristic, bypass := true, true
	fs.StringVar(&cfg.Addr, "proxy", "", "serve a caching reverse proxy (RFC 9111) at `ADDR` (host:port) for the --proxy-origin sites (default: off; docs/cache.md)")
	fs.StringVar(&cfg.FastAddr, "proxy-fast", "", "also serve the proxy at `ADDR` on fasthttp: plain hits in one system call, everything else as on --proxy (default: off; docs/cache.md)")
	fs.Var(&origins, "proxy-origin", "a site the proxy serves: `URL` (requests addressed to the proxy itself), HOST=URL, /PREFIX/=URL or HOST/PREFIX/=URL (repeatable; other Hosts are refused)")
	fs.Var(&mem, "proxy-memory", "bytes of objects the proxy keeps in memory (e.g. 256MiB)")
	fs.Var(&disk, "proxy-disk", "bytes of objects the proxy keeps on disk in DATA/cache (e.g. 10GiB)")
	fs.Var(&maxObj, "proxy-max-object", "largest body the proxy stores; larger ones are passed through")
	fs.StringVar(&cfg.Probe.URL, "proxy-probe", "", "every 5 s, time this object (`URL`: http://HOST/PATH, or /PATH of the default origin) through the proxy and from its origin: mure_cache_probe_seconds (paper 003's relay latency; default: off)")
	fs.BoolVar(&heuristic, "proxy-heuristic", true, "give responses with Last-Modified but no explicit lifetime a heuristic one (10% of their age, at most a day), as RFC 9111 permits")
	fs.BoolVar(&bypass, "proxy-bypass", true, "when the disk tier is past its capacity (--proxy-disk-queue, --proxy-disk-latency), send requests for objects held only on disk to the origin and keep new objects in memory only, instead of queuing behind the disk")
	fs.IntVar(&cfg.DiskQueue, "proxy-disk-queue", 64, "disk tier reads and writes in flight beyond which the disk counts as busy (see --proxy-bypass)")
	cfg.BypassMax = proxy.DefaultBypassMax
	fs.Var((*bypassMaxFlag)(&cfg.BypassMax), "proxy-bypass-max", "requests relayed to the origin at once while the disk is busy (those for objects held only on disk, and misses; 0: none, all of them are shed; --proxy-bypass=false queues them behind the disk instead); the bound halves while the CPU runs short (the host's quota exhausted, or goroutines waiting for a CPU), so that hits from memory keep their CPU; beyond it requests are shed (503 with Retry-After, or see --proxy-bypass-redirect)")
	fs.BoolVar(&cfg.BypassRedirect, "proxy-bypass-redirect", false, "shed requests beyond --proxy-bypass-max with a 307 to the same target at the origin (only for origins the clients can reach) instead of a 503")
	fs.DurationVar(&cfg.DiskLatency, "proxy-disk-latency", 100*time.Millisecond, "age of the oldest disk tier operation in flight beyond which the disk counts as busy (see --proxy-bypass)")
	return func() *proxy.Config {
		if cfg.Addr == "" {
			return nil
		}
		cfg.Origins = origins
		cfg.MemoryBytes, cfg.DiskBytes, cfg.Limits.MaxObject = int64(mem), int64(disk), int64(maxObj)
		cfg.NoHeuristic, cfg.NoBypass = !heuristic, !bypass
		return &cfg
	}
}

// originList is the repeatable --proxy-origin flag; in a config file one
// "proxy-origin = HOST=URL" line per origin.
type originList []proxy.Origin

func (l *originList) String() string {
	if l == nil {
		return ""
	}
	var parts []string
	for _, o := range *l {
		parts = append(parts, o.String())
	}
	return strings.Join(parts, " ")
}

func (l *originList) Set(s string) error {
	o, err := proxy.ParseOrigin(s)
	if err != nil {
		return err
	}
	*l = append(*l, o)
	return nil
}

// sizeFlag is a byte count spelled as settings spell them ("64MiB").
type sizeFlag int64

func (s *sizeFlag) String() string { return bytesize.Format(int64(*s)) }

func (s *sizeFlag) Set(v string) error {
	n, err := bytesize.Parse(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

// bypassMaxFlag is --proxy-bypass-max: a count, 0 meaning no relays
// (proxy.NoRelays: a Config's 0 is the default, as its other fields'),
// a negative count refused.
type bypassMaxFlag int

func (f *bypassMaxFlag) String() string {
	if f == nil {
		return ""
	}
	if *f == proxy.NoRelays {
		return "0"
	}
	return strconv.Itoa(int(*f))
}

func (f *bypassMaxFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return errors.New("not a whole number")
	case n < 0:
		return errors.New("must not be negative (0: relay none)")
	case n == 0:
		n = proxy.NoRelays
	}
	*f = bypassMaxFlag(n)
	return nil
}
