package files

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
)

// Cluster is what the file service needs from the node's cluster seat.
type Cluster interface {
	NodeID() string
	FSM() *meta.FSM
	Apply(ctx context.Context, cmd meta.Command) (*meta.Result, error)
	HasReadLease() bool
	LeaseDeadline(node string) (time.Time, bool)
	IsLeader() bool
	LeaseInfo() string
	WaitInvalidationReady(ctx context.Context) error
	LeasedExcept(keep []string) []string
	Alive(id string) bool
	PeerClient() *http.Client
	CatchUp(ctx context.Context) error
}

// Config tunes one node's file service.
type Config struct {
	// MaxBody is the largest file accepted by PUT, in bytes.
	MaxBody int64
	// MaxHops bounds a chain of redirects.
	MaxHops int
	// Fetchers is the number of concurrent replica fetches.
	Fetchers int
	// WriteTimeout bounds the cluster round trips of one write.
	WriteTimeout time.Duration
	// SettleWait bounds how long a read waits for a version being made
	// visible (pending) before answering 503.
	SettleWait time.Duration
	// UnsafeReads serves any local copy without the protocol's checks.
	// Tests only: the broken variant the linearizability checker must catch.
	UnsafeReads bool
	// Explain adds X-Mure-Judged to read answers: the applied index, fence
	// and lease they were judged on (debugging the protocol).
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
	return Config{MaxBody: 5 << 30, MaxHops: 8, Fetchers: 4, WriteTimeout: 30 * time.Second, SettleWait: 3 * time.Second,
		ScrubPeriod: 24 * time.Hour, ScrubRate: 64 << 20}
}

// Service is the file service of one node. It owns the invalidation fences,
// the resumption policy's bookkeeping and the replication worker.
type Service struct {
	cfg     Config
	cl      Cluster
	fsm     *meta.FSM
	st      *store.Store
	log     *slog.Logger
	self    string
	metrics *Metrics

	fences  fences
	protect protected
	drops   drops
	resumer *resumer
	// throttle caps the replication worker's fetches (replication.rate).
	throttle *throttle
	backlog  atomic.Int64
	// nodeHeader is the X-Mure-Node value, allocated once.
	nodeHeader []string

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds the service; Start runs its background work.
func New(cfg Config, cl Cluster, st *store.Store) *Service {
	def := DefaultConfig()
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = def.MaxBody
	}
	if cfg.MaxHops <= 0 {
		cfg.MaxHops = def.MaxHops
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
	s := &Service{cfg: cfg, cl: cl, fsm: cl.FSM(), st: st, log: cfg.Logger, self: cl.NodeID(), metrics: cfg.Metrics,
		nodeHeader: []string{cl.NodeID()}}
	s.fences.m = map[string]fence{}
	s.drops.kick = make(chan struct{}, 1)
	s.resumer = newResumer(s)
	s.throttle = newThrottle()
	return s
}

// Start launches the replication worker, the resumption policy, the
// scrub and the reporting of lost replicas.
func (s *Service) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(5)
	go func() { defer s.wg.Done(); s.replicateLoop(ctx) }()
	go func() { defer s.wg.Done(); s.resumer.loop(ctx) }()
	go func() { defer s.wg.Done(); s.settleLoop(ctx) }()
	go func() { defer s.wg.Done(); s.scrubLoop(ctx) }()
	go func() { defer s.wg.Done(); s.dropLoop(ctx) }()
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
	var m map[string]string
	s.fsm.Read(func(st *meta.State) { m = st.Config() })
	return meta.ParseConfig(m)
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

// Routes registers the client API handlers on mux.
func (s *Service) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /list", s.handleList)
	mux.HandleFunc("GET /status/files/{path...}", s.handleFileStatus)
}

// FilesPrefix is the URL prefix of file keys. Requests under it must go to
// ServeFiles directly, not through an http.ServeMux, which would "clean"
// keys such as a//b or a/./b into other keys instead of refusing them.
const FilesPrefix = "/files/"

// ServeFiles serves GET, HEAD, PUT and DELETE of /files/{path}.
func (s *Service) ServeFiles(w http.ResponseWriter, r *http.Request) {
	r.Pattern = FilesPrefix
	r.SetPathValue("path", strings.TrimPrefix(r.URL.Path, FilesPrefix))
	w.Header()["X-Mure-Node"] = s.nodeHeader // which node answered (after redirects)
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.handleGet(w, r)
	case http.MethodPut:
		s.handlePut(w, r)
	case http.MethodDelete:
		s.handleDelete(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT, DELETE")
		api.Error(w, http.StatusMethodNotAllowed, api.CodeMethod, r.Method+" is not allowed on files; use GET, HEAD, PUT or DELETE")
	}
}

// PeerRoutes registers the peer API handlers on mux.
func (s *Service) PeerRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /peer/files/invalidate", s.handleInvalidate)
	mux.HandleFunc("GET /peer/files/blob", s.handleBlobGet)
	mux.HandleFunc("PUT /peer/files/blob", s.handleBlobPut)
}
