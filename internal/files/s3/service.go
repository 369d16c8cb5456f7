package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/service"
)

// Config configures the S3 service of a node.
type Config struct {
	// Addr is where the S3 API listens (host:port).
	Addr string
	// Files returns the node's file API once the file service started
	// (the node wires it; this service never imports another).
	Files func() Files
	// Keys opens access keys for the signature check.
	Keys Keys
	// Anonymous are the grants of unsigned requests. Open (a node started
	// with --auth=false) lets every request do everything: unsigned, or
	// signed with any key and secret, whose signature is not checked
	// (decision 0060).
	Anonymous []auth.Grant
	Open      bool
	// Listen wraps the listener (TLS when the client ports speak it);
	// nil: plain.
	Listen func(net.Listener) net.Listener
	// UploadTTL is how long a multipart upload may stay unfinished; the
	// leader removes older ones (0: DefaultUploadTTL).
	UploadTTL time.Duration
	// IsLeader says whether this node sweeps abandoned uploads (one node
	// does; nil: never).
	IsLeader func() bool
	// Admission returns the node's client API limiters, read at Start
	// (the node makes them with its client API): every S3 request takes a
	// slot of all, a write (PUT, POST, DELETE) one of writes too, as
	// native requests do; a request refused is answered 503 SlowDown.
	// Nil: no bound.
	Admission func() (all, writes Admission)
}

// Service is the S3 API as a node service ("s3").
type Service struct {
	cfg   Config
	mu    sync.Mutex
	h     *Handler
	http  *service.HTTPServer
	stop  context.CancelFunc
	swept chan struct{}
}

// Status is the service's part of /status.
type Status struct {
	// Addr is the address the S3 API listens on.
	Addr string `json:"addr"`
}

// NewService checks cfg and returns the service.
func NewService(cfg Config) (*Service, error) {
	if cfg.Addr == "" {
		return nil, errors.New("s3: no address (--s3 ADDR)")
	}
	if cfg.Files == nil || cfg.Keys == nil {
		return nil, errors.New("s3: the file API and the access keys must be wired")
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("s3: --s3 %q: %w", cfg.Addr, err)
	}
	if cfg.UploadTTL < 0 {
		return nil, fmt.Errorf("s3: --s3-upload-ttl %s is negative", cfg.UploadTTL)
	}
	if cfg.UploadTTL == 0 {
		cfg.UploadTTL = DefaultUploadTTL
	}
	return &Service{cfg: cfg}, nil
}

// Name is "s3".
func (s *Service) Name() string { return "s3" }

// Start listens on the address and serves S3 there.
func (s *Service) Start(_ context.Context, env service.Env) error {
	fs := s.cfg.Files()
	if fs == nil {
		return errors.New("the file service is not running")
	}
	ln, err := service.Listen("--s3", s.cfg.Addr, s.cfg.Listen)
	if err != nil {
		return err
	}
	anon := s.cfg.Anonymous
	h := NewHandler(fs, s.cfg.Keys, anon, env.Logger)
	if s.cfg.Open {
		h.open()
	}
	if s.cfg.Admission != nil {
		h.admission, h.writeAdmission = s.cfg.Admission()
	}
	hs := service.ServeHTTP(ln, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}, env.Logger)
	s.mu.Lock()
	s.h, s.http = h, hs
	s.mu.Unlock()
	sweepCtx, stop := context.WithCancel(context.Background())
	s.stop, s.swept = stop, make(chan struct{})
	go s.sweep(sweepCtx, h)
	env.Logger.Info("s3 API listening", "addr", hs.Addr())
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
	s.stop()
	<-s.swept
	return hs.Shutdown(ctx)
}

// Status reports the listening address.
func (s *Service) Status() any { return Status{Addr: s.Addr()} }

// Handler answers S3 requests that arrive on another port: the node's
// client port sends it the requests Signed recognises, so that S3 goes
// through the front door as the client API does. Nil before Start.
func (s *Service) Handler() http.Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == nil {
		return nil
	}
	return s.h
}

// Addr is the address the S3 API listens on ("" before Start).
func (s *Service) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http == nil {
		return ""
	}
	return s.http.Addr()
}

// sweep removes abandoned uploads on the leader, every quarter of the
// upload TTL (at most every hour; at least every second, for tests).
func (s *Service) sweep(ctx context.Context, h *Handler) {
	defer close(s.swept)
	every := min(max(s.cfg.UploadTTL/4, time.Second), time.Hour)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.cfg.IsLeader == nil || !s.cfg.IsLeader() {
			continue
		}
		if _, err := h.sweepUploads(ctx, s.cfg.UploadTTL, time.Now()); err != nil && ctx.Err() == nil {
			h.log.Warn("s3: sweep of abandoned uploads", "err", err)
		}
	}
}
