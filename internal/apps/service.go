package apps

import (
	"context"

	"github.com/mure-dev/mure/internal/service"
)

// Service runs a node's apps as one of its services ("apps").
type Service struct {
	cfg  Config
	apps *Apps
}

// NewService returns the apps service for cfg, whose defaults are filled
// and which is checked now, before the node opens any port.
func NewService(cfg Config) (*Service, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg}, nil
}

// Name implements node.Service.
func (s *Service) Name() string { return "apps" }

// Start implements node.Service: it checks the configuration and mounts
// /cgi/ and the proxied apps' prefixes.
func (s *Service) Start(_ context.Context, env service.Env) error {
	s.cfg.NodeID = env.NodeID
	a, err := New(s.cfg, env.Logger, env.Metrics)
	if err != nil {
		return err
	}
	s.apps = a
	a.Routes(env.Routes)
	return nil
}

// Stop implements node.Service: CGI programs still running are stopped.
// The node stops its client API first, so in-flight requests have ended.
func (s *Service) Stop(context.Context) error {
	if s.apps != nil {
		s.apps.Close()
	}
	return nil
}

// Status is the apps' part of a node's /status.
type Status struct {
	// CGIDir is the directory of CGI programs ("" when none are served).
	CGIDir string `json:"cgi_dir,omitempty"`
	// CGIRunning is the CGI programs running now, of CGIMaxRunning.
	CGIRunning    int `json:"cgi_running"`
	CGIMaxRunning int `json:"cgi_max_running"`
	// Proxies are the prefixes served by reverse proxy.
	Proxies []string `json:"proxies,omitempty"`
}

// Status implements node.Service.
func (s *Service) Status() any {
	if s.apps == nil {
		return Status{}
	}
	a := s.apps
	st := Status{CGIDir: a.cfg.CGIDir, CGIRunning: len(a.slots), CGIMaxRunning: a.cfg.CGIMaxRunning}
	for _, p := range a.proxies {
		st.Proxies = append(st.Proxies, p.cfg.Prefix)
	}
	return st
}
