package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/node"
)

func init() { register("serve", "run a node (alone, or joining a cluster with --join)", runServe) }

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: mure serve --data DIR [flags]\n\n"+
			"Run a node: alone (a new cluster), or joining one with --join and --key-file.\n"+
			"Flags may also come from --config FILE; command-line flags win.\n\nflags:\n")
		fs.PrintDefaults()
	}
	var cfg node.Config
	var join, keyFile, configFile, timing, logLevel string
	fs.StringVar(&cfg.DataDir, "data", "", "data directory (required); holds the node's identity, raft state and files")
	fs.StringVar(&cfg.HTTPAddr, "http", node.DefaultHTTPAddr, "client API listen address")
	fs.StringVar(&cfg.FastHTTPAddr, "http-fast", "", "fast read lane listen address: GET/HEAD of whole local files on fasthttp, the rest redirected to --http (default: off)")
	fs.StringVar(&cfg.UIAddr, "ui-addr", "", "monitoring port `ADDR`: the dashboard, /history, /metrics, /status and health on a listener of their own, which keeps answering while the client port is overloaded (default: off, they are on --http only)")
	fs.StringVar(&cfg.PprofAddr, "pprof", "", "serve Go's profiler (/debug/pprof/) on this `ADDR` (keep it on loopback; default: off)")
	fs.StringVar(&cfg.AdvertiseHTTP, "advertise-http", "", "client API address given to clients in redirects (default: --http)")
	fs.StringVar(&cfg.PeerAddr, "peer", node.DefaultPeerAddr, "node-to-node listen address (gossip, raft and replication, TCP and UDP)")
	fs.StringVar(&cfg.Advertise, "advertise", "", "peer address other nodes dial, when --peer's is not reachable (IP:port)")
	fs.StringVar(&cfg.Zone, "zone", "", "label of the place this node runs in (rack, room, site): reads prefer a copy in their own zone (letters, digits, '-', '_', '.'; default: none)")
	fs.StringVar(&join, "join", "", "comma-separated peer addresses of members to join (first start only)")
	fs.StringVar(&keyFile, "key-file", "", "file holding the cluster key (a founding node's DATA/cluster.key); or set MURE_KEY")
	fs.IntVar(&cfg.MaxInFlight, "max-inflight", 256, "client requests executed at once; more wait")
	fs.IntVar(&cfg.MaxConns, "max-conns", 10000, "client connections open at once on each client port, on --s3 and on --proxy's ports; beyond, a new one is answered 503 at once (0: no bound)")
	fs.IntVar(&cfg.MaxQueue, "max-queue", 1024, "client requests waiting for a slot; beyond, 503 with Retry-After")
	fs.IntVar(&cfg.MaxWriteInFlight, "max-write-inflight", node.DefaultMaxWriteInFlight, "of those, file writes (PUT, DELETE) executed at once")
	fs.IntVar(&cfg.MaxWriteQueue, "max-write-queue", node.DefaultMaxWriteQueue, "file writes waiting for a write slot; beyond, 503 with Retry-After")
	fs.StringVar(&configFile, "config", "", "file of 'flag = value' lines (flag names as above); command-line flags win")
	fs.StringVar(&timing, "timing", "default", "failure-detection timings: default, or fast (tests on one machine)")
	fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	fs.BoolVar(&cfg.DebugFaults, "debug-faults", false, "tests only: expose POST /debug/isolate?on=1|0 to cut this node off from its peers")
	fs.StringVar(&cfg.DebugHostFigures, "debug-host-figures", "", "tests only: a JSON file of simulated load figures by node ID, `FILE` (placement tests on one machine)")
	fs.BoolVar(&cfg.DebugUnsafeReads, "debug-unsafe-reads", false, "tests only: serve local copies without the consistency checks (a deliberately broken protocol)")
	fs.BoolVar(&cfg.NoSync, "unsafe-no-fsync", false, "skip fsync (benchmarks and tests only: acknowledged writes may be lost on power failure)")
	filesFlags(fs, &cfg)
	appsFlags(fs, &cfg)
	s3Flags(fs, &cfg)
	proxyCfg := proxyFlags(fs)
	webdavFlags(fs, &cfg)
	front := frontFlags(fs)
	sessionsDone := sessionFlags(fs, &cfg)
	authDone := authFlags(fs, &cfg)
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "serve takes no arguments (got %q)\n", fs.Args())
		return errUsage
	}
	if configFile != "" {
		if err := applyConfigFile(fs, configFile); err != nil {
			return err
		}
	}
	if cfg.DataDir == "" {
		fmt.Fprintln(stderr, "serve needs --data DIR (created if missing)")
		return errUsage
	}
	if err := authDone(); err != nil {
		fmt.Fprintf(stderr, "--anonymous-read: %v\n", err)
		return errUsage
	}
	if cfg.Token != "" {
		fmt.Fprintln(stderr, "warning: --token (MURE_TOKEN) is deprecated: it is a static admin token; make users and their tokens instead (docs/security.md)")
	}
	if join != "" {
		cfg.Join = strings.Split(join, ",")
	}
	// On the command line 0 means off / no cap; in node.Config, negative.
	if cfg.ScrubPeriod <= 0 {
		cfg.ScrubPeriod = -1
	}
	if cfg.ScrubRate <= 0 {
		cfg.ScrubRate = -1
	}
	cfg.Front = front()
	cfg.Proxy = proxyCfg()
	sessionsDone()
	cfg.Key = os.Getenv("MURE_KEY")
	if keyFile != "" {
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return fmt.Errorf("read --key-file: %w", err)
		}
		cfg.Key = strings.TrimSpace(string(b))
	}
	switch timing {
	case "default":
		cfg.Timing = cluster.DefaultTiming()
	case "fast":
		cfg.Timing = cluster.FastTiming()
	default:
		return fmt.Errorf("--timing must be default or fast, not %q", timing)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	setMemoryLimit(ctx, cfg.Logger)

	n, err := node.Open(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "mure node %s (cluster %s)\n  client API  http://%s\n  peer        %s\n  data        %s\n",
		n.ID(), n.ClusterID(), n.HTTPAddr(), n.PeerAddr(), cfg.DataDir)
	if a := n.FastAddr(); a != "" {
		fmt.Fprintf(stdout, "  fast reads  http://%s\n", a)
	}
	if a := n.ProxyAddr(); a != "" {
		fmt.Fprintf(stdout, "  proxy       http://%s (caching, %d origins)\n", a, len(cfg.Proxy.Origins))
	}
	if cfg.Front != nil {
		fmt.Fprintf(stdout, "  front door  http://%s (%s, %s; open while this node holds the dispatcher role)\n", cfg.Front.Addr, cfg.Front.Mode, cfg.Front.Policy)
	}
	if n.NewKey {
		fmt.Fprintf(stdout, "  new cluster key in %s: other nodes join with --key-file %s --join %s\n", n.KeyPath(), n.KeyPath(), n.PeerAddr())
	}
	if n.NewAdmin {
		fmt.Fprintf(stdout, "  admin credential in %s (mode 0600; shown nowhere else). Use it with:\n"+
			"    export MURE_TOKEN=$(cat %s)   # for mure; or mure --data %s ...\n"+
			"    curl -H \"Authorization: Bearer $MURE_TOKEN\" http://%s/status\n",
			n.AdminTokenPath(), n.AdminTokenPath(), cfg.DataDir, n.HTTPAddr())
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for wait := true; wait; {
		select {
		case <-ctx.Done():
			wait = false
		case <-n.Left():
			wait = false
		case <-hup:
			if err := n.ReloadTLS(); err != nil {
				fmt.Fprintf(stderr, "SIGHUP: %v (the previous certificate stays)\n", err)
			}
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return n.Close(sctx)
}

// applyConfigFile sets every flag named in the file that was not given on
// the command line.
func applyConfigFile(fs *flag.FlagSet, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	defer f.Close()
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, value, ok := strings.Cut(text, "=")
		name, value = strings.TrimSpace(name), strings.Trim(strings.TrimSpace(value), `"`)
		if !ok || fs.Lookup(name) == nil || name == "config" {
			return fmt.Errorf("%s:%d: expected 'flag = value' with a flag of mure serve, got %q", path, line, text)
		}
		if given[name] {
			continue
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", path, line, name, err)
		}
	}
	return sc.Err()
}
