package monitor

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/history"
	"github.com/mure-dev/mure/internal/service"
)

// Config is the monitor's configuration; node fills it.
type Config struct {
	// Read returns this node's figures now (counters as running totals).
	Read func() history.Reading
	// Peers is an HTTP client whose requests travel over the peer port
	// (transport.Mux.HTTPTransport).
	Peers *http.Client
	// Interval is how often the node samples itself and pulls its peers'
	// points (0: one second, the history's fine step).
	Interval time.Duration
	// MaxNodes bounds the nodes whose history is kept (0:
	// history.DefaultMaxNodes).
	MaxNodes int
	// Extra, when set, adds figures to the cluster view the dashboard
	// shows (the front door's decisions by policy).
	Extra func() map[string]any
	// Sessions, when set, returns the persistent sessions a dashboard
	// user may see ("" when the dashboard is open): no secrets, only
	// what the session list shows.
	Sessions func(ctx context.Context, user string) any
	// UI is how the dashboard authenticates a browser.
	UI UIConfig
}

// Service is the monitor as a node service.
type Service struct {
	cfg   Config
	set   *history.Set
	self  string
	cl    *cluster.Cluster
	log   *slog.Logger
	rater history.Rater
	ui    *ui

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	pulled  map[string]int64 // node → newest point time pulled from it
	pulls   int64            // successful pulls since the start
	backfed bool             // the whole history was asked of a peer once
	// holderFront is the dispatcher role holder's front door status, as
	// it last answered (holderID: that holder).
	holderFront json.RawMessage
	holderID    string
	// viewed is when the view was last drawn (Unix ns): the holder's
	// front door is asked for only while someone looks.
	viewed atomic.Int64
	// shared are the view's and the whole history's encodings, built
	// once per interval for every request and stream.
	shared shared
}

// watchKeep is how long after the last view drawn the holder's front
// door is still asked for each second (a dashboard draws one a second).
const watchKeep = 10 * time.Second

// New checks cfg and returns the service.
func New(cfg Config) *Service {
	if cfg.Interval <= 0 {
		cfg.Interval = history.FineStep * time.Second
	}
	return &Service{cfg: cfg, set: history.NewSet(cfg.MaxNodes), pulled: map[string]int64{}}
}

// Name is "monitor".
func (s *Service) Name() string { return "monitor" }

// Start mounts the routes and starts sampling and pulling.
func (s *Service) Start(_ context.Context, env service.Env) error {
	s.self, s.cl, s.log = env.NodeID, env.Cluster, env.Logger
	env.Routes.HandleFunc("GET /history", s.handleHistory)
	env.PeerRoutes.HandleFunc("GET /peer/history", s.handleHistory)
	env.PeerRoutes.HandleFunc("GET /peer/monitor/extra", s.handleExtra)
	s.ui = newUI(s, s.cfg.UI)
	s.ui.routes(env.Routes)
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	// A first reading primes the rates, which come with the first point,
	// on the next whole second: a point of its own could round to that
	// second and push the next one out, its counts lost with it.
	if s.cfg.Read != nil {
		s.rater.Point(s.cfg.Read())
	}
	s.wg.Go(func() { s.loop(ctx) })
	return nil
}

// Stop ends the loops and waits for them.
func (s *Service) Stop(context.Context) error {
	if s.cancel != nil {
		s.cancel()
	}
	if s.ui != nil {
		s.ui.stop()
	}
	s.wg.Wait()
	return nil
}

// Status is the monitor's part of /status.
type Status struct {
	// Nodes is how many nodes' history this node holds; Bytes the memory
	// their rings hold at most.
	Nodes int   `json:"nodes"`
	Bytes int64 `json:"bytes"`
	// Pulls counts the successful pulls of peers' points since the start.
	Pulls int64 `json:"pulls"`
	// Sessions is the dashboard sessions open on this node; Streams the
	// dashboards it feeds now.
	Sessions int `json:"sessions"`
	Streams  int `json:"streams"`
}

// Status returns the monitor's figures.
func (s *Service) Status() any {
	n := len(s.set.Nodes())
	s.mu.Lock()
	pulls := s.pulls
	s.mu.Unlock()
	st := Status{Nodes: n, Bytes: int64(n) * history.SeriesBytes, Pulls: pulls}
	if s.ui != nil {
		st.Sessions, st.Streams = s.ui.sessions.count(), len(s.ui.streams)
	}
	return st
}

// History returns the set of series this node holds (tests, programs
// embedding a node).
func (s *Service) History() *history.Set { return s.set }

// loop samples, pulls and publishes on each whole interval of the clock:
// a reading a little late still rounds to its own second (a ticker
// started at x.5 s would put late and early readings in one second and
// leave the next empty).
func (s *Service) loop(ctx context.Context) {
	t := time.NewTimer(time.Until(time.Now().Truncate(s.cfg.Interval).Add(s.cfg.Interval)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(time.Until(time.Now().Truncate(s.cfg.Interval).Add(s.cfg.Interval)))
			s.sample()
			s.pull(ctx)
			if time.Since(time.Unix(0, s.viewed.Load())) < watchKeep {
				s.pullHolder(ctx)
			} else {
				s.forgetHolder()
			}
			s.shared.published()
			s.ui.publish()
		}
	}
}

// sample reads this node's figures into its own series.
func (s *Service) sample() {
	if s.cfg.Read == nil {
		return
	}
	s.set.Series(s.self).Add(s.rater.Point(s.cfg.Read()))
}
