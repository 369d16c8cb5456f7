package files

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
)

// Cluster is what the file service needs from the node's cluster seat.
type Cluster interface {
	NodeID() string
	FSM() *meta.FSM
	Apply(ctx context.Context, cmd meta.Command) (*meta.Result, error)
	HasReadLease() bool
	// AwaitReadLease waits until this node holds a read lease or ctx
	// ends, and reports whether it holds one.
	AwaitReadLease(ctx context.Context) bool
	LeaseDeadline(node string) (time.Time, bool)
	IsLeader() bool
	LeaseInfo() string
	WaitInvalidationReady(ctx context.Context) error
	LeasedExcept(keep []string) []string
	Alive(id string) bool
	// Zone is this node's zone label; Locality is node id's zone and
	// latest load figures as gossip last told them (nil: none yet).
	Zone() string
	Locality(id string) (zone string, load *cluster.Load)
	// SetHotReads gossips this node's busiest files read elsewhere;
	// HotReads is what node id gossiped of its own (hot.go).
	SetHotReads(hs []cluster.HotRead)
	HotReads(id string) []cluster.HotRead
	// RTT is this node's estimate of the round-trip time to node id
	// (0: none measured yet).
	RTT(id string) time.Duration
	CatchUp(ctx context.Context) error
}

// Config tunes one node's file service.
type Config struct {
	// MaxBody is the largest file accepted by PUT, in bytes.
	MaxBody int64
	// Fetchers is the number of concurrent replica fetches.
	Fetchers int
	// WriteTimeout bounds the cluster round trips of one write.
	WriteTimeout time.Duration
	// SettleWait bounds how long a read waits for a version being made
	// visible (pending) before giving up with ErrPending.
	SettleWait time.Duration
	// LeaseWait bounds how long a read that another node sent here waits
	// for this node's read lease, when it has none, before giving up with
	// ErrNoQuorum (the client retries a 503). Sending it on instead could
	// send it back: the node it came from may have no lease either. About
	// the read lease's duration: a node that lost its lease for a moment
	// (a slow renewal, an election) has it back by then.
	LeaseWait time.Duration
	// UnsafeReads serves any local copy without the protocol's checks.
	// Tests only: the broken variant the linearizability checker must catch.
	UnsafeReads bool
	// Explain asks the faces to show the state a read was judged on (the
	// native API's X-Mure-Judged header; debugging the protocol).
	Explain bool
	// ScrubPeriod is how often the background scrub reads every local
	// replica to check it against its checksum; a pass is spread over the
	// period. Shorter finds silent corruption sooner and costs more disk
	// bandwidth. Negative: no scrub (replicas are then still checked when
	// first opened after a start).
	ScrubPeriod time.Duration
	// ScrubRate caps the scrub's reading, in bytes per second, so that a
	// large store takes longer than ScrubPeriod rather than competing with
	// clients for the disk. Negative: no cap.
	ScrubRate float64
	Logger    *slog.Logger
	Metrics   *Metrics
}

// DefaultConfig returns production defaults.
func DefaultConfig() Config {
	return Config{MaxBody: 5 << 30, Fetchers: 4, WriteTimeout: 30 * time.Second, SettleWait: 3 * time.Second,
		LeaseWait: time.Second, ScrubPeriod: 24 * time.Hour, ScrubRate: 64 << 20}
}

// Service is the file service of one node. It owns the invalidation fences,
// the resumption policy's bookkeeping and the replication worker.
type Service struct {
	cfg     Config
	cl      Cluster
	peers   Peers
	fsm     *meta.FSM
	st      *store.Store
	log     *slog.Logger
	self    string
	metrics *Metrics

	fences  fences
	invs    *invBatcher // the leader's invalidations, batched per node
	protect protected
	drops   drops
	resumer *resumer
	reports *batcher[meta.Item, reportOutcome] // this node's replica reports, batched
	settles *batcher[meta.Item, error]         // the leader's settles, batched
	// throttle caps the replication worker's fetches (replication.rate).
	throttle *throttle
	backlog  atomic.Int64
	hot      *hot // hot files gaining copies here (hot.go)

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds the service over the node's cluster seat, its store and the
// transport to its peers; Start runs its background work.
func New(cfg Config, cl Cluster, st *store.Store, peers Peers) *Service {
	def := DefaultConfig()
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = def.MaxBody
	}
	if cfg.Fetchers <= 0 {
		cfg.Fetchers = def.Fetchers
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = def.WriteTimeout
	}
	if cfg.SettleWait <= 0 {
		cfg.SettleWait = def.SettleWait
	}
	if cfg.LeaseWait <= 0 {
		cfg.LeaseWait = def.LeaseWait
	}
	if cfg.ScrubPeriod == 0 {
		cfg.ScrubPeriod = def.ScrubPeriod
	}
	switch {
	case cfg.ScrubRate == 0:
		cfg.ScrubRate = def.ScrubRate
	case cfg.ScrubRate < 0:
		cfg.ScrubRate = 0 // the store's "no cap"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	s := &Service{cfg: cfg, cl: cl, peers: peers, fsm: cl.FSM(), st: st, log: cfg.Logger, self: cl.NodeID(), metrics: cfg.Metrics}
	s.fences.m = map[string]fence{}
	s.drops.kick = make(chan struct{}, 1)
	s.resumer = newResumer(s)
	s.invs = newInvBatcher(peers)
	s.reports = newReplicaReports(s)
	s.settles = newSettles(s)
	s.throttle = newThrottle()
	s.hot = newHot()
	return s
}

// Start launches the replication worker, the resumption policy, the
// scrub, the reporting of lost replicas and the hot-file decisions.
func (s *Service) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(6)
	go func() { defer s.wg.Done(); s.replicateLoop(ctx) }()
	go func() { defer s.wg.Done(); s.resumer.loop(ctx) }()
	go func() { defer s.wg.Done(); s.settleLoop(ctx) }()
	go func() { defer s.wg.Done(); s.scrubLoop(ctx) }()
	go func() { defer s.wg.Done(); s.dropLoop(ctx) }()
	go func() { defer s.wg.Done(); s.hotLoop(ctx) }()
}

// Close stops the background work and waits for it.
func (s *Service) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	return nil
}

// config returns the cluster-wide settings in force.
func (s *Service) config() meta.Config {
	var c meta.Config
	s.fsm.Read(func(st *meta.State) { c = st.TypedConfig() })
	return c
}

// nodeAddrs returns the HTTP and peer addresses of a node from the catalogue.
func (s *Service) nodeAddrs(id string) (httpAddr, peerAddr string, ok bool) {
	s.fsm.Read(func(st *meta.State) {
		if n := st.Node(id); n != nil && n.State != meta.NodeRemoved {
			httpAddr, peerAddr, ok = n.HTTPAddr, n.PeerAddr, true
		}
	})
	return
}

// NodeID is the ID of the node this service runs on.
func (s *Service) NodeID() string { return s.self }

// MaxBody is the largest body Put accepts, in bytes.
func (s *Service) MaxBody() int64 { return s.cfg.MaxBody }

// Explains reports whether reads should show the state they were judged
// on (Config.Explain).
func (s *Service) Explains() bool { return s.cfg.Explain }

// Metrics returns the service's series, for the faces to count what only
// they see (redirects, bytes sent).
func (s *Service) Metrics() *Metrics { return s.metrics }

// LeaseInfo describes this node's read lease (for explanations).
func (s *Service) LeaseInfo() string { return s.cl.LeaseInfo() }
