package webdav

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/service"
)

// Config configures the WebDAV service of a node.
type Config struct {
	// Addr is where WebDAV listens (host:port).
	Addr string
	// Files returns the node's file API once the file service started
	// (the node wires it; this service never imports another).
	Files func() Files
	// Guard wraps the handler in the node's authentication (nil: none,
	// with Open set).
	Guard func(http.Handler) http.Handler
	// Open lets every caller do everything (a node started with
	// --auth=false).
	Open bool
	// Listen wraps the listener (TLS when the client ports speak it);
	// nil: plain.
	Listen func(net.Listener) net.Listener
}

// Service is the WebDAV face as a node service ("webdav").
type Service struct {
	cfg  Config
	mu   sync.Mutex
	http *service.HTTPServer
}

// Status is the service's part of /status.
type Status struct {
	// Addr is the address WebDAV listens on.
	Addr string `json:"addr"`
}

// NewService checks cfg and returns the service.
func NewService(cfg Config) (*Service, error) {
	if cfg.Addr == "" {
		return nil, errors.New("webdav: no address (--webdav ADDR)")
	}
	if cfg.Files == nil || cfg.Guard == nil && !cfg.Open {
		return nil, errors.New("webdav: the file API and the guard must be wired")
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("webdav: --webdav %q: %w", cfg.Addr, err)
	}
	return &Service{cfg: cfg}, nil
}

// Name is "webdav".
func (s *Service) Name() string { return "webdav" }

// seat is the cluster seat as the locks need it.
type seat struct{ *cluster.Cluster }

func (s seat) ReadPart(ns string, fn func(p meta.Part)) bool { return s.FSM().ReadPart(ns, fn) }

// Start listens on the address and serves WebDAV there.
func (s *Service) Start(_ context.Context, env service.Env) error {
	fs := s.cfg.Files()
	if fs == nil {
		return errors.New("the file service is not running")
	}
	ln, err := service.Listen("--webdav", s.cfg.Addr, s.cfg.Listen)
	if err != nil {
		return err
	}
	var h http.Handler = NewHandler(NewFS(fs, s.cfg.Open), NewLocks(seat{env.Cluster}), env.Logger)
	if s.cfg.Guard != nil {
		h = s.cfg.Guard(h)
	}
	hs := service.ServeHTTP(ln, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}, env.Logger)
	s.mu.Lock()
	s.http = hs
	s.mu.Unlock()
	env.Logger.Info("WebDAV listening", "addr", hs.Addr())
	return nil
}

// Stop stops accepting requests and waits for those in flight (bounded
// by ctx).
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	hs := s.http
	s.mu.Unlock()
	if hs == nil {
		return nil
	}
	return hs.Shutdown(ctx)
}

// Status reports the listening address.
func (s *Service) Status() any { return Status{Addr: s.Addr()} }

// Addr is the address WebDAV listens on ("" before Start).
func (s *Service) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http == nil {
		return ""
	}
	return s.http.Addr()
}
