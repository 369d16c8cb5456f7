package apps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultCGITimeout bounds a CGI run when Config.CGITimeout is 0.
const DefaultCGITimeout = 30 * time.Second

// DefaultCGIMaxRunning is 4 programs per core the node may use
// (GOMAXPROCS, which follows a cgroup's CPU quota).
func DefaultCGIMaxRunning() int { return 4 * runtime.GOMAXPROCS(0) }

// Config says which apps a node serves. The zero Config serves none.
type Config struct {
	// CGIDir, when set, is the directory of CGI programs served under
	// /cgi/NAME (mure serve --cgi-dir). Every executable file directly in
	// it is reachable by any client that may use the API: put nothing
	// else there.
	CGIDir string
	// CGITimeout bounds one CGI run, from start to the last byte of its
	// answer (0: DefaultCGITimeout). A program still running then is
	// killed with everything it started: long enough for the slowest
	// legitimate request, short enough that runaway programs cannot pile
	// up and starve the node.
	CGITimeout time.Duration
	// CGIMaxRunning bounds the CGI programs running at once; more requests
	// wait for a slot (0: DefaultCGIMaxRunning()).
	CGIMaxRunning int
	// CGINice, when positive, runs CGI programs at this niceness (through
	// nice(1)): a node whose CPU is saturated by its programs still runs
	// its own heartbeats, redirects and file service first (0: unchanged).
	CGINice int
	// Proxies are the apps served by reverse proxy (mure serve --app).
	Proxies []Proxy
	// NodeID is given to CGI programs as MURE_NODE.
	NodeID string
	// Token is the node's API token (mure serve --token), if any. It is
	// removed from requests before they reach an app.
	Token string
}

// Apps serves a node's CGI programs and proxied apps. Create it with New,
// mount it with Routes, stop it with Close.
type Apps struct {
	cfg     Config
	log     *slog.Logger
	m       metrics
	proxies []*proxy
	reaper  *reaper // nil without CGIDir
	nice    string  // path of nice(1) when CGINice > 0 and it exists
	slots   chan struct{}

	closing context.Context // ended by Close: CGI runs stop
	stop    context.CancelFunc
	mu      sync.Mutex
	closed  bool
	runs    sync.WaitGroup // CGI runs in progress
}

// New checks cfg and returns the apps it describes. Metrics are
// registered with reg unless it is nil.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Apps, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	a := &Apps{cfg: cfg, log: log, m: newMetrics(reg), slots: make(chan struct{}, cfg.CGIMaxRunning)}
	for _, p := range cfg.Proxies {
		a.proxies = append(a.proxies, a.newProxy(p))
	}
	a.closing, a.stop = context.WithCancel(context.Background())
	if cfg.CGIDir != "" {
		a.reaper = startReaper(log)
		if cfg.CGINice > 0 {
			if p, err := exec.LookPath("nice"); err == nil {
				a.nice = p
			} else {
				log.Warn("nice(1) not found: CGI programs run at the node's priority", "err", err)
			}
		}
		log.Info("serving CGI programs", "dir", cfg.CGIDir, "timeout", cfg.CGITimeout, "nice", cfg.CGINice)
		if !canStop {
			log.Warn("CGI programs cannot be stopped on this system: --cgi-timeout is not enforced")
		}
	}
	for _, p := range cfg.Proxies {
		log.Info("serving app", "prefix", p.Prefix, "target", p.Target.String())
	}
	return a, nil
}

// normalize fills cfg's defaults and checks it: the errors name the flags.
func (cfg Config) normalize() (Config, error) {
	if cfg.CGITimeout < 0 {
		return cfg, fmt.Errorf("--cgi-timeout must be positive, not %s", cfg.CGITimeout)
	}
	if cfg.CGITimeout == 0 {
		cfg.CGITimeout = DefaultCGITimeout
	}
	if cfg.CGIDir != "" {
		dir, err := checkDir(cfg.CGIDir)
		if err != nil {
			return cfg, err
		}
		cfg.CGIDir = dir
	}
	if cfg.CGIMaxRunning < 0 {
		return cfg, fmt.Errorf("--cgi-max-running must be positive, not %d", cfg.CGIMaxRunning)
	}
	if cfg.CGIMaxRunning == 0 {
		cfg.CGIMaxRunning = DefaultCGIMaxRunning()
	}
	seen := map[string]bool{}
	for _, p := range cfg.Proxies {
		if err := p.validate(); err != nil {
			return cfg, fmt.Errorf("--app %s=%s: %w", p.Prefix, p.Target, err)
		}
		if seen[p.Prefix] {
			return cfg, fmt.Errorf("--app %s: the prefix is given twice", p.Prefix)
		}
		seen[p.Prefix] = true
	}
	return cfg, nil
}

// checkDir returns dir made absolute, or an error naming the flag.
func checkDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--cgi-dir %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("--cgi-dir %s does not exist", dir)
	}
	if err != nil {
		return "", fmt.Errorf("--cgi-dir: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("--cgi-dir %s is not a directory", dir)
	}
	return abs, nil
}

// Routes mounts /cgi/ (when CGIDir is set) and every proxy prefix on mux.
func (a *Apps) Routes(mux *http.ServeMux) {
	if a.cfg.CGIDir != "" {
		mux.HandleFunc(CGIPrefix, a.serveCGI)
	}
	for _, p := range a.proxies {
		mux.Handle(p.cfg.Prefix, p)
	}
}

// Close stops the CGI programs still running (they are killed, their
// clients answered 503) and waits for their handlers to return. Call it
// after the HTTP server's Shutdown, which waits for the rest. Later calls
// do nothing.
func (a *Apps) Close() {
	a.mu.Lock()
	was := a.closed
	a.closed = true
	a.mu.Unlock()
	if was {
		return
	}
	a.stop()
	a.runs.Wait()
	if a.reaper != nil {
		a.reaper.close()
	}
	for _, p := range a.proxies {
		p.transport.CloseIdleConnections()
	}
}

// begin registers a CGI run; false once Close has begun.
func (a *Apps) begin() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.runs.Add(1)
	return true
}
