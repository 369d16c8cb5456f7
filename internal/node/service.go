package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mure-dev/mure/internal/service"
)

// Service is one capability of a node: the file service, the apps, the
// front door, the single-address agent, and every one to come. The node
// starts its configured services in order once its cluster seat is open,
// and stops them in reverse (docs/decisions/0013-node-services.md).
type Service interface {
	// Name is the service's name: its key in /status and in logs.
	Name() string
	// Start mounts the service's routes and starts its work. It returns
	// once the service serves; an error leaves nothing running.
	Start(ctx context.Context, env service.Env) error
	// Stop ends the service's work and waits for its goroutines; ctx
	// bounds how long in-flight work may take to finish.
	Stop(ctx context.Context) error
	// Status is the service's state for /status: a struct of the
	// service's own (exported, with JSON field names), read by the CLI and
	// clients through Status.Service.
	Status() any
}

// services runs a node's services: started in order, stopped in reverse.
type services struct {
	mu      sync.Mutex
	started []Service
}

// start starts each service in turn. When one fails, those already started
// are stopped in reverse and the error names the service.
func (s *services) start(ctx context.Context, env service.Env, all ...Service) error {
	for _, svc := range all {
		e := env
		e.Logger = env.Logger.With("part", svc.Name())
		if err := svc.Start(ctx, e); err != nil {
			err = fmt.Errorf("start %s: %w", svc.Name(), err)
			return errors.Join(err, s.stop(ctx))
		}
		s.mu.Lock()
		s.started = append(s.started, svc)
		s.mu.Unlock()
	}
	return nil
}

// stop stops the started services in reverse order and returns their
// errors joined, each naming its service.
func (s *services) stop(ctx context.Context) error {
	var errs []error
	for {
		s.mu.Lock()
		if len(s.started) == 0 {
			s.mu.Unlock()
			return errors.Join(errs...)
		}
		svc := s.started[len(s.started)-1]
		s.started = s.started[:len(s.started)-1]
		s.mu.Unlock()
		if err := svc.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", svc.Name(), err))
		}
	}
}

// list returns the running services, in start order.
func (s *services) list() []Service {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.started)
}
