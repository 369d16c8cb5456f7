package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/cache"
	"github.com/mure-dev/mure/internal/cache/purge"
	"github.com/mure-dev/mure/internal/cache/tier"
	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/service"
)

// Config configures a node's caching proxy.
type Config struct {
	// Addr is where the proxy listens (host:port).
	Addr string
	// Origins are the sites served; a request matching none is refused.
	Origins []Origin
	// FastAddr, when set, is a second listener of the proxy on fasthttp
	// (--proxy-fast): plain hits are written in one system call; every
	// other request is answered as on Addr.
	FastAddr string
	// Dir is the disk tier's directory ("" : memory only); the node gives
	// DATA/cache.
	Dir string
	// MemoryBytes and DiskBytes bound the tiers (0: 64 MiB and 1 GiB).
	MemoryBytes, DiskBytes int64
	// DiskQueue and DiskLatency say when the disk tier is past its
	// capacity (operations in flight; age of the oldest; 0: 64 and
	// 100 ms): requests for objects held only on disk then go to the
	// origin, and new objects stay in memory only. NoBypass turns this
	// off: every request waits for the disk however long its queue.
	DiskQueue   int
	DiskLatency time.Duration
	NoBypass    bool
	// BypassMax bounds those requests, and the misses while the disk is
	// busy, sent to the origin at once (0: DefaultBypassMax; NoRelays:
	// none, every such request is shed); the bound
	// halves whenever the CPU ran short in the last 100 ms (CPUShort) and
	// grows back by one every 100 ms when it did not, so that relays
	// never take the CPU hits from memory need. A request beyond it is
	// shed: a 503 with Retry-After, or with BypassRedirect a 307 to the
	// same target at its origin (for origins the clients can reach
	// themselves). Decision 0055.
	BypassMax      int
	BypassRedirect bool
	// CPUShort tells whether the CPU ran short since it was last asked;
	// the bypass bound follows it. Start reads the host and the Go scheduler when it is nil;
	// NewHandler keeps no CPU signal then (tests give their own).
	// BypassTick is the bound's step (0: 100 ms).
	CPUShort   func() bool
	BypassTick time.Duration
	// NoHeuristic turns heuristic freshness off: responses without an
	// explicit lifetime are then always validated.
	NoHeuristic bool
	// Limits bound origins and collapsed misses.
	Limits Limits
	// NoSync skips fsync in the disk tier (tests only).
	NoSync bool
	// Listen wraps the listener (TLS when the client ports speak it);
	// TLS says it does (the probe then asks over https).
	Listen func(net.Listener) net.Listener
	TLS    bool
	// Alone keeps this node's cache to itself: no key owners, no relay.
	Alone bool
	// Sharing, when set, is used instead of the one Start builds from the
	// cluster seat (tests).
	Sharing *Sharing
	// Purges, when set, is used instead of the cluster's purge records
	// (tests).
	Purges PurgeLog
	// Probe, when its URL is set, times one object through the proxy and
	// from its origin every few seconds (mure_cache_probe_seconds).
	Probe Probe
}

// Service is the caching proxy as a node service ("proxy").
type Service struct {
	cfg Config

	mu     sync.Mutex
	h      *Handler
	http   *service.HTTPServer
	fast   *fastLane
	fastLn net.Listener
	tiers  *tier.Tiers
	probe  *prober
	stop   context.CancelFunc
	probed chan struct{}
}

// Status is the service's part of /status.
type Status struct {
	Addr    string       `json:"addr"`
	Fast    string       `json:"fast,omitempty"`
	Origins []string     `json:"origins"`
	Tiers   tier.Stats   `json:"tiers"`
	Probe   *ProbeStatus `json:"probe,omitempty"`
	Counts  Counts       `json:"counts"`
	// PurgesCurrent: this node has caught up with the cluster's purge
	// log since it started, and serves what it stored before (docs/cache.md).
	PurgesCurrent bool `json:"purges_current"`
}

// NewService checks cfg and returns the service.
func NewService(cfg Config) (*Service, error) {
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("proxy: --proxy %q: %w", cfg.Addr, err)
	}
	if cfg.FastAddr != "" {
		if _, _, err := net.SplitHostPort(cfg.FastAddr); err != nil {
			return nil, fmt.Errorf("proxy: --proxy-fast %q: %w", cfg.FastAddr, err)
		}
	}
	rt, err := newRouter(cfg.Origins)
	if err != nil {
		return nil, err
	}
	if cfg.Probe.URL != "" {
		u, err := url.Parse(cfg.Probe.URL)
		if err != nil || u.Path == "" || rt.route(cmp.Or(u.Host, "localhost"), u.Path) == nil {
			return nil, errBadProbe(cfg.Probe.URL)
		}
	}
	if cfg.MemoryBytes < 0 || cfg.DiskBytes < 0 {
		return nil, errors.New("proxy: tier sizes must not be negative")
	}
	if cfg.DiskQueue < 0 || cfg.DiskLatency < 0 {
		return nil, errors.New("proxy: --proxy-disk-queue and --proxy-disk-latency must not be negative")
	}
	if cfg.BypassMax < NoRelays {
		return nil, errors.New("proxy: --proxy-bypass-max must not be negative")
	}
	cfg.Limits.fill(cfg.MemoryBytes)
	return &Service{cfg: cfg}, nil
}

// Name is "proxy".
func (s *Service) Name() string { return "proxy" }

// NewHandler builds the proxy's handler over open tiers (the service's
// Start does; tests call it directly).
func NewHandler(cfg Config, tiers *tier.Tiers, env service.Env) (*Handler, error) {
	rt, err := newRouter(cfg.Origins)
	if err != nil {
		return nil, err
	}
	cfg.Limits.fill(cfg.MemoryBytes)
	policy := cache.DefaultPolicy()
	policy.Heuristic = !cfg.NoHeuristic
	h := &Handler{router: rt, policy: policy, tiers: tiers, transport: newTransport(cfg.Limits), fresh: newFreshTransport(cfg.Limits), flights: newFlights(cfg.Limits.CollapseMax),
		metrics: newMetrics(), log: env.Logger, limits: cfg.Limits, now: time.Now, share: cfg.Sharing,
		relays: newRelays(cfg.BypassMax, cfg.CPUShort), redirect: cfg.BypassRedirect}
	if cfg.Purges != nil {
		h.purges = &purges{log: cfg.Purges, started: time.Now()}
		h.purges.catchUp(tiers) // what was purged while this node was away
	}
	h.bgCtx, h.bgStop = context.WithCancel(context.Background())
	if env.Metrics != nil {
		if err := h.metrics.register(env.Metrics, tiers, h.relays); err != nil {
			h.bgStop()
			return nil, err
		}
	}
	h.bg.Add(1)
	go func() { defer h.bg.Done(); h.relays.run(h.bgCtx, cmp.Or(cfg.BypassTick, bypassTick)) }()
	return h, nil
}

// Start opens the tiers (indexing the disk tier again), listens and serves.
func (s *Service) Start(_ context.Context, env service.Env) error {
	if !s.cfg.Alone && s.cfg.Sharing == nil && env.Cluster != nil {
		c := env.Cluster
		s.cfg.Sharing = &Sharing{Client: c.PeerClient, Ring: NewMemberRing(env.NodeID, func() []Peer {
			var out []Peer
			for _, m := range c.Members() {
				if m.PeerAddr != "" && c.Alive(m.ID) {
					out = append(out, Peer{ID: m.ID, Addr: m.PeerAddr})
				}
			}
			return out
		}, 500*time.Millisecond)}
	}
	if s.cfg.Purges == nil && env.Cluster != nil {
		s.cfg.Purges = clusterPurges{env.Cluster}
	}
	if s.cfg.CPUShort == nil && !s.cfg.NoBypass {
		s.cfg.CPUShort = defaultCPUShort()
	}
	tiers, err := tier.Open(tier.Config{MemoryBytes: s.cfg.MemoryBytes, Dir: s.cfg.Dir, DiskBytes: s.cfg.DiskBytes, NoSync: s.cfg.NoSync, Logger: env.Logger,
		DiskQueue: s.cfg.DiskQueue, DiskLatency: s.cfg.DiskLatency, NoBypass: s.cfg.NoBypass})
	if err != nil {
		return err
	}
	h, err := NewHandler(s.cfg, tiers, env)
	if err != nil {
		tiers.Close()
		return err
	}
	ln, err := service.Listen("--proxy", s.cfg.Addr, s.cfg.Listen)
	if err != nil {
		tiers.Close()
		return err
	}
	if env.PeerRoutes != nil {
		env.PeerRoutes.HandleFunc("GET "+peerFetchRoute, h.ServePeerFetch)
		env.PeerRoutes.HandleFunc("POST "+peerRemoveRoute, h.ServePeerRemove)
	}
	if env.Routes != nil {
		env.Routes.HandleFunc("POST "+purgeRoute, h.ServePurge)
	}
	h.followPurges(250 * time.Millisecond)
	var fast *fastLane
	var fastLn net.Listener
	if s.cfg.FastAddr != "" {
		if fastLn, err = service.Listen("--proxy-fast", s.cfg.FastAddr, s.cfg.Listen); err != nil {
			ln.Close()
			tiers.Close()
			return err
		}
		fast = newFastLane(h)
		fast.start(fastLn, env.Logger)
	}
	hs := service.ServeHTTP(ln, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}, env.Logger)
	s.mu.Lock()
	s.h, s.http, s.tiers, s.fast, s.fastLn = h, hs, tiers, fast, fastLn
	s.mu.Unlock()
	if s.cfg.Probe.URL != "" {
		p, err := h.newProber(s.cfg.Probe, hs.Addr(), s.cfg.TLS)
		if err != nil {
			return errors.Join(err, s.Stop(context.Background()))
		}
		if env.Metrics != nil {
			if err := env.Metrics.Register(p.latency); err != nil {
				return errors.Join(err, s.Stop(context.Background()))
			}
		}
		ctx, stop := context.WithCancel(context.Background())
		s.mu.Lock()
		s.probe, s.stop, s.probed = p, stop, make(chan struct{})
		s.mu.Unlock()
		go func() { defer close(s.probed); p.run(ctx) }()
	}
	env.Logger.Info("caching proxy listening", "addr", hs.Addr(), "origins", len(s.cfg.Origins), "disk", s.cfg.Dir)
	return nil
}

// Stop stops accepting requests, waits for those in flight (bounded by
// ctx) and for background revalidations, and closes the tiers.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	hs, h, tiers, stopProbe, probed, fast := s.http, s.h, s.tiers, s.stop, s.probed, s.fast
	s.mu.Unlock()
	if hs == nil {
		return nil
	}
	if stopProbe != nil {
		stopProbe()
		<-probed
	}
	err := hs.Shutdown(ctx)
	if fast != nil {
		err = errors.Join(err, fast.shutdown(ctx))
	}
	h.Close()
	tiers.Close()
	return err
}

// Close stops the handler's background revalidations and waits for them.
func (h *Handler) Close() {
	h.bgStop()
	h.bg.Wait()
	h.transport.CloseIdleConnections()
}

// Status reports the address, the origins and the tiers' figures.
func (s *Service) Status() any {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{}
	if s.http != nil {
		st.Addr = s.http.Addr()
	}
	if s.fastLn != nil {
		st.Fast = s.fastLn.Addr().String()
	}
	for _, o := range s.cfg.Origins {
		st.Origins = append(st.Origins, o.String())
	}
	if s.tiers != nil {
		st.Tiers = s.tiers.Stats()
	}
	if s.probe != nil {
		ps := s.probe.status()
		st.Probe = &ps
	}
	if s.h != nil {
		st.Counts = s.h.metrics.snapshot()
		st.PurgesCurrent = s.h.purges == nil || s.h.purges.current.Load()
	}
	return st
}

// Addr is the address the proxy listens on ("" before Start).
func (s *Service) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http == nil {
		return ""
	}
	return s.http.Addr()
}

// clusterPurges records purges as raft entries of the "cache" namespace.
type clusterPurges struct{ c *cluster.Cluster }

func (p clusterPurges) Propose(ctx context.Context, key string, prefix bool) error {
	op, err := purge.Op(key, prefix, time.Now())
	if err != nil {
		return err
	}
	res, err := p.c.ApplyOp(ctx, op)
	if err != nil {
		return err
	}
	return res.Err
}

func (p clusterPurges) CatchUp(ctx context.Context) error { return p.c.CatchUp(ctx) }

func (p clusterPurges) Since(seq uint64) (recs []purge.Record) {
	p.c.FSM().ReadPart(purge.NS, func(mp meta.Part) { recs = mp.(*purge.Part).Since(seq) })
	return recs
}
