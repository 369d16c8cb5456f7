package sessionhttp

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"sync"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/service"
	"github.com/mure-dev/mure/internal/sessions"
)

// Service is a node's sessions service ("sessions").
type Service struct {
	cfg  sessions.Config
	m    *sessions.Manager
	cl   *cluster.Cluster
	peer *http.Client
	log  *slog.Logger
	// ctx ends at Stop: attached clients are cut.
	ctx    context.Context
	cancel context.CancelFunc

	wg      sync.WaitGroup // attached clients being relayed
	tickets tickets        // the browser terminal's WebSocket tickets
}

// NewService checks cfg (its kinds) before the node opens any port.
func NewService(cfg sessions.Config) (*Service, error) {
	if _, err := sessions.NewManager(cfg, nil); err != nil {
		return nil, err
	}
	return &Service{cfg: cfg}, nil
}

// Name implements node.Service.
func (s *Service) Name() string { return "sessions" }

// Start implements node.Service: it adopts the holders of a previous run
// and mounts the routes.
func (s *Service) Start(ctx context.Context, env service.Env) error {
	cfg := s.cfg
	cfg.Logger = env.Logger
	m, err := sessions.NewManager(cfg, env.Cluster)
	if err != nil {
		return err
	}
	if err := m.Open(ctx); err != nil {
		return err
	}
	s.m, s.cl, s.peer, s.log = m, env.Cluster, env.Cluster.PeerClient(), env.Logger
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.routes(env.Routes)
	s.peerRoutes(env.PeerRoutes)
	return nil
}

// Stop implements node.Service: attached clients are cut (they may
// attach again elsewhere); the sessions run on in their holders.
func (s *Service) Stop(context.Context) error {
	if s.m != nil {
		s.m.Close()
		s.cancel()
	}
	s.wg.Wait()
	return nil
}

// Status is the sessions' part of a node's /status.
type Status struct {
	// Kinds are the kinds this node offers.
	Kinds []string `json:"kinds"`
	// Running is the sessions whose holder runs on this node.
	Running int `json:"running"`
	// CannotSwitch says why this node cannot start sessions ("" if it can).
	CannotSwitch string `json:"cannot_switch,omitempty"`
	// Limits says whether per-session limits are enforced (cgroups);
	// LimitsEscape why some sessions' groups are outside the node's own
	// group ("" when none are: they are bounded by its limits too).
	Limits       bool   `json:"limits"`
	LimitsEscape string `json:"limits_escape,omitempty"`
	// Placement is how new sessions are placed (docs/decisions/0033).
	Placement PlacementStatus `json:"placement"`
}

// PlacementStatus is the placement part of /status.
type PlacementStatus struct {
	// Policies maps each kind to its place= policy.
	Policies map[string]string `json:"policies"`
	// Decider is the node that decides placements by load now (the
	// dispatcher role's holder).
	Decider string `json:"decider,omitempty"`
	// InFlight counts, per node, the placements this node decided whose
	// session does not show yet where its policy looks.
	InFlight map[string]int `json:"in_flight,omitempty"`
	// Recent is the latest placements by load this node decided, with
	// the figures each used, newest last.
	Recent []sessions.Placed `json:"recent,omitempty"`
	// MaxPerNode and MaxPerUser are the limits (0: none).
	MaxPerNode int `json:"max_per_node,omitempty"`
	MaxPerUser int `json:"max_per_user,omitempty"`
}

// Status implements node.Service.
func (s *Service) Status() any {
	if s.m == nil {
		return Status{}
	}
	st := Status{Running: len(s.m.Stats()), Limits: s.cfg.Cgroups != nil}
	if st.Limits {
		st.LimitsEscape = s.cfg.Cgroups.Escaped
	}
	for _, k := range s.m.Kinds() {
		st.Kinds = append(st.Kinds, k.Name)
	}
	sort.Strings(st.Kinds)
	st.Placement.Policies = map[string]string{}
	for _, k := range st.Kinds {
		st.Placement.Policies[k] = s.m.PlacePolicy(k)
	}
	st.Placement.Decider, _ = s.cl.Dispatcher()
	st.Placement.Recent, st.Placement.InFlight = s.m.PlacementStatus()
	st.Placement.MaxPerNode, st.Placement.MaxPerUser = s.cfg.MaxPerNode, s.cfg.MaxPerUser
	if err := sessions.CanSwitch(); err != nil {
		st.CannotSwitch = err.Error()
	}
	return st
}
