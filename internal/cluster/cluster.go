package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/raftstore"
)

// Sentinel errors.
var (
	// ErrNoLeader: no leader is known (no quorum, or an election is running).
	ErrNoLeader = errors.New("cluster: no leader (no quorum or election in progress)")
	// ErrOtherCluster: a member belongs to a different cluster.
	ErrOtherCluster = errors.New("cluster: member of another cluster")
	// ErrJoin: none of the join addresses could be reached.
	ErrJoin = errors.New("cluster: cannot join")
	// ErrNotLeaseReady: the leader cannot grant leases yet (just elected).
	ErrNotLeaseReady = errors.New("cluster: leader not ready")
	// ErrRefused: the cluster refused an operation (e.g. remove a live node).
	ErrRefused = errors.New("cluster: refused")
)

// Cluster is one node's seat in the cluster. It owns raft, gossip, the
// read lease and the leader's background work.
type Cluster struct {
	cfg   Config
	log   *slog.Logger
	fsm   *meta.FSM
	raft  *raft.Raft
	store *raftstore.Store
	trans *raft.NetworkTransport
	peers *http.Client
	fwd   forwarder // a follower's proposals to the leader, batched (fwdbatch.go)

	gossip *gossip

	idMu      sync.RWMutex
	clusterID string

	// refused is set when gossip refused to merge with another cluster.
	refusedMu sync.Mutex
	refused   error

	kickCh   chan struct{}
	notifyCh chan bool

	// supports is what this node's state machine applies, advertised in
	// gossip (meta.Supports' string form).
	supports string

	lease    clientLease
	leader   leaderState
	dispatch dispatchState

	loadMu sync.Mutex
	load   *Load
	// hotReads is what this node gossips of its busiest files read
	// elsewhere (hotreads.go), under loadMu.
	hotReads string
	leaving  atomic.Bool // Leave was called: gossip nothing more

	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed sync.Once
}

// Open starts raft and gossip and joins or bootstraps the cluster.
func Open(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Timing == (Timing{}) {
		cfg.Timing = DefaultTiming()
	}
	c := &Cluster{
		cfg:       cfg,
		log:       cfg.Logger,
		fsm:       meta.NewFSM(cfg.Parts...),
		peers:     &http.Client{Transport: cfg.Mux.HTTPTransport()},
		clusterID: cfg.ClusterID,
		kickCh:    make(chan struct{}, 1),
		notifyCh:  make(chan bool, 16),
	}
	c.leader.table = map[string]time.Time{}
	c.fwd.c = c
	c.supports = c.fsm.Supports().String()
	hasState, err := c.startRaft()
	if err != nil {
		return nil, err
	}
	if err := c.startGossip(); err != nil {
		c.shutdownRaft()
		return nil, err
	}
	if err := c.join(ctx, hasState); err != nil {
		c.gossip.list.Shutdown()
		c.shutdownRaft()
		return nil, err
	}
	if !hasState && len(cfg.Join) == 0 && cfg.Bootstrap {
		boot := raft.Configuration{Servers: []raft.Server{{ID: raft.ServerID(cfg.NodeID), Address: raft.ServerAddress(cfg.Mux.Addr()), Suffrage: raft.Voter}}}
		if err := c.raft.BootstrapCluster(boot).Error(); err != nil {
			c.gossip.list.Shutdown()
			c.shutdownRaft()
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
	}
	bg, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.goLoop(bg, c.leaderLoop)
	c.goLoop(bg, c.reconcileLoop)
	c.goLoop(bg, c.leaseLoop)
	c.goLoop(bg, c.rejoinLoop)
	c.goLoop(bg, c.loadLoop)
	return c, nil
}

func (c *Cluster) goLoop(ctx context.Context, f func(context.Context)) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f(ctx)
	}()
}

func (c *Cluster) startRaft() (bool, error) {
	t := c.cfg.Timing
	dir := filepath.Join(c.cfg.Dir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("raft dir: %w", err)
	}
	hl := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Error, Output: &slogWriter{log: c.log.With("part", "raft")}})
	w, err := raftstore.Open(filepath.Join(dir, "log"), raftstore.Options{FS: c.cfg.LogFS, NoSync: c.cfg.NoSync})
	if err != nil {
		return false, err
	}
	// A node of an earlier version kept its log in bbolt (decision 0019).
	if err := raftstore.ImportBolt(filepath.Join(dir, "raft.db"), w); err != nil {
		w.Close()
		return false, err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hl)
	if err != nil {
		w.Close()
		return false, fmt.Errorf("open raft snapshots: %w", err)
	}
	c.store = w
	c.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: c.cfg.Mux.RaftLayer(), MaxPool: 4, Timeout: 10 * time.Second, Logger: hl,
	})
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.cfg.NodeID)
	rc.HeartbeatTimeout, rc.ElectionTimeout = t.RaftHeartbeat, t.RaftElection
	rc.LeaderLeaseTimeout, rc.CommitTimeout = t.RaftLeaderLease, t.RaftCommit
	rc.SnapshotThreshold, rc.TrailingLogs = t.SnapshotThreshold, t.SnapshotTrailing
	if t.SnapshotThreshold > 0 && t.SnapshotThreshold < 1024 {
		rc.SnapshotInterval = 200 * time.Millisecond // small thresholds are for tests
	}
	// Group commit: the leader appends every command waiting (up to 256)
	// in one batch, one fsync of the log; the buffered channel lets
	// proposers queue while that fsync runs.
	rc.BatchApplyCh, rc.MaxAppendEntries = true, 256
	rc.NotifyCh = c.notifyCh
	rc.Logger = hl
	logs, err := raft.NewLogCache(1024, w)
	if err != nil {
		c.shutdownRaft()
		return false, fmt.Errorf("raft log cache: %w", err)
	}
	hasState, err := raft.HasExistingState(logs, w, snaps)
	if err != nil {
		c.shutdownRaft()
		return false, fmt.Errorf("inspect raft state: %w", err)
	}
	r, err := raft.NewRaft(rc, c.fsm, logs, w, snaps, c.trans)
	if err != nil {
		c.trans.Close()
		w.Close()
		return false, fmt.Errorf("start raft: %w", err)
	}
	c.raft = r
	return hasState, nil
}

func (c *Cluster) shutdownRaft() {
	if c.raft != nil {
		if err := c.raft.Shutdown().Error(); err != nil {
			c.log.Warn("raft shutdown", "err", err)
		}
	}
	if c.trans != nil {
		c.trans.Close()
	}
	if c.store != nil {
		c.store.Close()
	}
}

// Close stops the node's part in the cluster without leaving it: the
// others see it as failed until it comes back.
func (c *Cluster) Close() error {
	c.closed.Do(func() {
		if c.cancel != nil {
			c.cancel()
		}
		c.wg.Wait()
		if c.gossip != nil {
			c.gossip.list.Shutdown()
		}
		c.shutdownRaft()
		c.peers.CloseIdleConnections()
	})
	return nil
}

// FSM returns the node's copy of the replicated state.
func (c *Cluster) FSM() *meta.FSM { return c.fsm }

// NodeID returns this node's ID.
func (c *Cluster) NodeID() string { return c.cfg.NodeID }

// ClusterID returns the cluster's ID ("" until learnt).
func (c *Cluster) ClusterID() string {
	c.idMu.RLock()
	defer c.idMu.RUnlock()
	return c.clusterID
}

// PeerClient returns an HTTP client that reaches other nodes' peer API.
func (c *Cluster) PeerClient() *http.Client { return c.peers }

func (c *Cluster) localMeta() nodeMeta {
	return nodeMeta{Cluster: c.ClusterID(), HTTP: c.cfg.HTTPAddr, Load: c.localLoad(), Supports: c.supports, Zone: c.cfg.Zone,
		Hot: c.localHotReads()}
}

func (c *Cluster) kick() {
	select {
	case c.kickCh <- struct{}{}:
	default:
	}
}

// slogWriter turns hclog's lines into slog records.
type slogWriter struct{ log *slog.Logger }

func (w *slogWriter) Write(p []byte) (int, error) {
	w.log.Warn(string(trimNL(p)))
	return len(p), nil
}

func trimNL(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}
