package frontdoor

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/mure-dev/mure/internal/dispatch"
	"github.com/mure-dev/mure/internal/service"
)

// Service runs a node's front door as one of its services ("frontdoor").
// Every node configured with one runs it; only the dispatcher role's
// holder opens the door.
type Service struct {
	cfg  Config
	door *Door
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// NewService returns the front door service for cfg, whose defaults are
// filled and checked now.
func NewService(cfg Config) (*Service, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("front door address %q: %w", cfg.Addr, err)
	}
	if !slices.Contains(dispatch.PolicyNames, cfg.Policy) {
		return nil, fmt.Errorf("front door policy %q: use one of %s", cfg.Policy, strings.Join(dispatch.PolicyNames, ", "))
	}
	return &Service{cfg: cfg}, nil
}

// Name implements node.Service.
func (s *Service) Name() string { return "frontdoor" }

// Door returns the running door (nil before Start).
func (s *Service) Door() *Door { return s.door }

// Start implements node.Service.
func (s *Service) Start(_ context.Context, env service.Env) error {
	cfg := s.cfg
	cfg.Logger = env.Logger
	d, err := New(cfg, env.Cluster)
	if err != nil {
		return err
	}
	if err := env.Metrics.Register(d); err != nil {
		return err
	}
	s.door = d
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.wg.Go(func() { d.Run(ctx) })
	return nil
}

// Stop implements node.Service: the door gives the role up and closes.
func (s *Service) Stop(context.Context) error {
	if s.stop != nil {
		s.stop()
		s.wg.Wait()
	}
	return nil
}

// Status implements node.Service: a Status.
func (s *Service) Status() any {
	if s.door == nil {
		return Status{}
	}
	return s.door.Status()
}
