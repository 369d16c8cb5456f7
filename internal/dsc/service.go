package dsc

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/mure-dev/mure/internal/service"
)

// Service runs a node's single-address agent as one of its services
// ("single_address"): the agent, and the client API served on the
// cluster address.
type Service struct {
	cfg     Config
	synPort int                   // UDP port of every node's agent, on its peer host
	serve   string                // the cluster address and port the client API answers on
	agent   atomic.Pointer[Agent] // set by Start; read by the front door's role callback
}

// NewService returns the single-address service: the agent of cfg, which
// listens for forwarded SYNs on synPort of the node's peer host, and the
// client API served at addr (the cluster address and port). Start fills
// cfg's Self, Listen and Logger.
func NewService(cfg Config, synPort int, addr string) *Service {
	return &Service{cfg: cfg, synPort: synPort, serve: addr}
}

// Name implements node.Service.
func (s *Service) Name() string { return "single_address" }

// Start implements node.Service: it sets the host up, starts the agent and
// serves the client API on the cluster address.
func (s *Service) Start(ctx context.Context, env service.Env) error {
	cfg := s.cfg
	host, _, err := net.SplitHostPort(env.PeerAddr)
	if err != nil {
		return fmt.Errorf("single-address mode: peer address %q: %w", env.PeerAddr, err)
	}
	cfg.Self, cfg.Listen, cfg.Logger = env.NodeID, net.JoinHostPort(host, strconv.Itoa(s.synPort)), env.Logger
	a, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	if err := env.Metrics.Register(Collector(a.Stats)); err != nil {
		env.Logger.Warn("single-address metrics not registered", "err", err)
	}
	ln, err := net.Listen("tcp", s.serve)
	if err != nil {
		a.Close(ctx)
		return fmt.Errorf("single-address mode: listen on the cluster address: %w", err)
	}
	s.agent.Store(a)
	env.Serve(ln)
	return nil
}

// RoleChanged tells the agent the dispatcher role may have moved.
func (s *Service) RoleChanged() {
	if a := s.agent.Load(); a != nil {
		a.RoleChanged()
	}
}

// Stop implements node.Service: it stops the agent and undoes the host
// setup. The client API's listener is closed by the node's server.
func (s *Service) Stop(ctx context.Context) error {
	if a := s.agent.Load(); a != nil {
		a.Close(ctx)
	}
	return nil
}

// Status implements node.Service: the agent's Stats.
func (s *Service) Status() any {
	a := s.agent.Load()
	if a == nil {
		return Stats{}
	}
	return a.Stats()
}
