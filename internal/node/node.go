package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mure-dev/mure/internal/apps"
	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/dispatch"
	"github.com/mure-dev/mure/internal/dsc"
	"github.com/mure-dev/mure/internal/files"
	"github.com/mure-dev/mure/internal/files/filehttp"
	"github.com/mure-dev/mure/internal/files/filepeer"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/hostload"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
	"github.com/mure-dev/mure/internal/transport"
)

// Node is one running mure node.
type Node struct {
	cfg     Config
	log     *slog.Logger
	id      identity
	mux     *transport.Mux
	cl      *cluster.Cluster
	st      *store.Store
	files   *files.Service
	fileAPI *filehttp.Handler
	apps    *apps.Apps
	reg     *prometheus.Registry
	httpLn  net.Listener
	httpSrv *http.Server
	fastLn  net.Listener
	pprof   *http.Server
	load    *hostload.Reader
	fast    *filehttp.FastLane
	peerSrv *http.Server
	door    *frontdoor.Door
	dsc     *dsc.Agent // single-address mode
	// conns counts the client connections open on the main port (direct
	// and handed over); gossiped as the node's load.
	conns      atomic.Int64
	refused    atomic.Int64 // client connections refused over MaxConns
	handedOver *prometheus.CounterVec
	doorStop   context.CancelFunc
	// NewKey is set when this start created the cluster key.
	NewKey bool

	left      chan struct{}
	leftOnce  sync.Once
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// Open starts a node: it returns once the node serves its APIs and has
// joined (or founded) its cluster.
func Open(ctx context.Context, cfg Config) (_ *Node, err error) {
	if cfg.DataDir == "" {
		return nil, errors.New("a data directory is required (--data DIR)")
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = DefaultHTTPAddr
	}
	if cfg.PeerAddr == "" {
		cfg.PeerAddr = DefaultPeerAddr
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Timing == (cluster.Timing{}) {
		cfg.Timing = cluster.DefaultTiming()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	n := &Node{cfg: cfg, left: make(chan struct{}), reg: prometheus.NewRegistry()}
	var closers []func()
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				closers[i]()
			}
		}
	}()

	id, existing, err := loadIdentity(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	founding := !existing && len(cfg.Join) == 0
	if !existing {
		id = identity{NodeID: newID(4)}
		if founding {
			id.ClusterID = newID(8)
		}
	}
	key, created, err := loadKey(cfg.DataDir, cfg.Key, founding || existing)
	if err != nil {
		return nil, err
	}
	n.NewKey = created
	n.id = id
	n.log = cfg.Logger.With("node", id.NodeID)
	n.apps, err = apps.New(apps.Config{CGIDir: cfg.CGIDir, CGITimeout: cfg.CGITimeout, CGINice: cfg.CGINice, CGIMaxRunning: cfg.CGIMaxRunning, Proxies: cfg.Apps,
		NodeID: id.NodeID, Token: cfg.Token}, n.log.With("part", "apps"), n.reg)
	if err != nil {
		return nil, err
	}
	closers = append(closers, n.apps.Close)

	n.mux, err = transport.Listen(transport.Config{BindAddr: cfg.PeerAddr, AdvertiseAddr: cfg.Advertise, Key: key, Logger: n.log.With("part", "transport")})
	if err != nil {
		return nil, fmt.Errorf("peer port %s: %w", cfg.PeerAddr, err)
	}
	closers = append(closers, func() { n.mux.Close() })
	if cfg.DebugFaults {
		n.mux.EnableFaults()
	}

	n.httpLn, err = net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("client API port %s: %w", cfg.HTTPAddr, err)
	}
	closers = append(closers, func() { n.httpLn.Close() })
	if cfg.MaxConns > 0 {
		n.httpLn = frontdoor.LimitConns(n.httpLn, cfg.MaxConns, n.connRefused)
	}
	advHTTP := n.advertiseHTTP()
	if cfg.FastHTTPAddr != "" {
		if n.fastLn, err = net.Listen("tcp", cfg.FastHTTPAddr); err != nil {
			return nil, fmt.Errorf("fast read lane port %s: %w", cfg.FastHTTPAddr, err)
		}
		closers = append(closers, func() { n.fastLn.Close() })
		if cfg.MaxConns > 0 {
			n.fastLn = frontdoor.LimitConns(n.fastLn, cfg.MaxConns, n.connRefused)
		}
	}

	n.st, err = store.Open(filepath.Join(cfg.DataDir, "store"), store.Options{NoSync: cfg.NoSync, CacheBytes: cfg.CacheBytes, FS: cfg.StoreFS})
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { n.st.Close() })

	var svc *files.Service
	n.load = hostload.Open()
	sampler := &loadSampler{r: n.load, conns: n.openConns}
	n.cl, err = cluster.Open(ctx, cluster.Config{
		NodeID: id.NodeID, ClusterID: id.ClusterID, Dir: cfg.DataDir, HTTPAddr: advHTTP,
		Mux: n.mux, Key: key, Join: cfg.Join, Bootstrap: founding, Timing: cfg.Timing, Load: sampler.take,
		Logger:  n.log.With("part", "cluster"),
		Barrier: func(ctx context.Context, r *meta.Result) error { return svc.Barrier(ctx, r) },
	})
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { n.cl.Close() })
	if id.ClusterID == "" {
		id.ClusterID = n.cl.ClusterID()
	}
	n.id = id
	if err := saveIdentity(cfg.DataDir, id); err != nil {
		return nil, err
	}

	svc = files.New(files.Config{MaxBody: cfg.MaxBody, UnsafeReads: cfg.DebugUnsafeReads, Explain: cfg.DebugFaults,
		ScrubPeriod: cfg.ScrubPeriod, ScrubRate: float64(cfg.ScrubRate),
		Logger: n.log.With("part", "files"), Metrics: files.NewMetrics(n.reg)}, n.cl, n.st, filepeer.New(n.cl.PeerClient))
	n.files = svc
	n.fileAPI = filehttp.New(svc)
	svc.Start()
	closers = append(closers, func() { svc.Close() })
	n.registerMetrics()

	n.peerSrv = &http.Server{Handler: n.peerHandler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: discardLog()}
	n.httpSrv = &http.Server{Handler: n.clientHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: discardLog(),
		ConnState: n.countConn}
	// Connections a front door relays here start with a signed preamble;
	// the others pass unchanged (docs/dispatch.md).
	verifier := &frontdoor.Verifier{Key: key.HandoverKey(), Dispatcher: func() string { id, _ := n.cl.Dispatcher(); return id },
		Leader: func() string { id, _ := n.cl.Leader(); return id }}
	n.serve(n.peerSrv, n.mux.HTTPListener())
	n.serve(n.httpSrv, frontdoor.AcceptHandovers(n.httpLn, verifier, func(reason string) { n.handedOver.WithLabelValues(reason).Inc() }))
	if n.fastLn != nil {
		n.fast = filehttp.NewFastLane(svc, advHTTP, cfg.Token, max(cfg.MaxInFlight, 256)*16)
		n.wg.Go(func() {
			if err := n.fast.Serve(n.fastLn); err != nil {
				n.log.Error("fast read lane stopped", "err", err)
			}
		})
	}
	if cfg.PprofAddr != "" {
		ln, err := net.Listen("tcp", cfg.PprofAddr)
		if err != nil {
			return nil, fmt.Errorf("profiler port %s: %w", cfg.PprofAddr, err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		n.pprof = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: discardLog()}
		n.serve(n.pprof, ln)
	}
	if cfg.Front != nil {
		fc := *cfg.Front
		fc.Key, fc.Logger = key.HandoverKey(), n.log.With("part", "frontdoor")
		// Connections the policy sends to this node itself go to its own
		// server without a relay.
		local := frontdoor.NewLocalListener(n.httpLn.Addr())
		n.serve(n.httpSrv, local)
		fc.Local = local.Deliver
		fc.PolicyOverride = func() (p string) {
			n.cl.FSM().Read(func(st *meta.State) { p = dispatch.PolicySetting(st.Config()) })
			return p
		}
		fc.OnRole = func(bool) {
			if n.dsc != nil {
				n.dsc.RoleChanged()
			}
		}
		if n.door, err = frontdoor.New(fc, n.cl); err != nil {
			return nil, err
		}
		n.reg.MustRegister(n.door)
		if fc.Mode == frontdoor.ModeSingleAddress {
			if err := n.startSingleAddress(ctx, fc, key.HandoverKey()); err != nil {
				return nil, err
			}
			closers = append(closers, func() { n.dsc.Close(context.Background()) })
		}
		dctx, stop := context.WithCancel(context.Background())
		n.doorStop = stop
		n.wg.Go(func() { n.door.Run(dctx) })
	}
	n.log.Info("node started", "http", advHTTP, "fast", cfg.FastHTTPAddr, "peer", n.mux.Addr(), "cluster", id.ClusterID, "data", cfg.DataDir)
	return n, nil
}

func (n *Node) serve(srv *http.Server, ln net.Listener) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("server stopped", "err", err)
		}
	}()
}

func (n *Node) advertiseHTTP() string {
	if n.cfg.AdvertiseHTTP != "" {
		return n.cfg.AdvertiseHTTP
	}
	addr := n.httpLn.Addr().(*net.TCPAddr)
	if !addr.IP.IsUnspecified() {
		return addr.String()
	}
	host, _, _ := net.SplitHostPort(n.mux.Addr())
	return net.JoinHostPort(host, strconv.Itoa(addr.Port))
}

// countConn keeps n.conns: connections opened minus those closed or
// taken over (hijacked) on the main port.
func (n *Node) countConn(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		n.conns.Add(1)
	case http.StateClosed, http.StateHijacked:
		n.conns.Add(-1)
	}
}

// openConns returns the client connections open on both client ports.
// connRefused counts a connection refused over MaxConns.
func (n *Node) connRefused(string) { n.refused.Add(1) }

func (n *Node) openConns() int {
	c := int(n.conns.Load())
	if n.fast != nil {
		c += n.fast.OpenConnections()
	}
	return c
}

// Door returns the node's front door (nil when it has none).
func (n *Node) Door() *frontdoor.Door { return n.door }

// FastAddr returns the fast read lane's address ("" when off).
func (n *Node) FastAddr() string {
	if n.fastLn == nil {
		return ""
	}
	return n.fastLn.Addr().String()
}

// ID returns the node's ID.
func (n *Node) ID() string { return n.id.NodeID }

// ClusterID returns the cluster's ID.
func (n *Node) ClusterID() string { return n.id.ClusterID }

// HTTPAddr returns the client API address (as advertised).
func (n *Node) HTTPAddr() string { return n.advertiseHTTP() }

// PeerAddr returns the peer address (as advertised).
func (n *Node) PeerAddr() string { return n.mux.Addr() }

// KeyPath returns where the cluster key is kept.
func (n *Node) KeyPath() string { return filepath.Join(n.cfg.DataDir, keyFile) }

// Cluster exposes the node's cluster seat (for status and tests).
func (n *Node) Cluster() *cluster.Cluster { return n.cl }

// Left is closed when the node has left the cluster (mure node leave).
func (n *Node) Left() <-chan struct{} { return n.left }

// Close stops the node: the client API first (in-flight requests get up to
// ctx's deadline), then the services, the cluster seat and the peer port.
func (n *Node) Close(ctx context.Context) error {
	n.closeOnce.Do(func() {
		if n.doorStop != nil {
			n.doorStop()
		}
		if n.fast != nil {
			_ = n.fast.Shutdown(ctx)
		}
		_ = n.httpSrv.Shutdown(ctx)
		n.apps.Close()
		if n.pprof != nil {
			_ = n.pprof.Close()
		}
		n.files.Close()
		_ = n.peerSrv.Shutdown(ctx)
		if n.dsc != nil {
			n.dsc.Close(ctx)
		}
		n.cl.Close()
		n.st.Close()
		n.mux.Close()
		n.wg.Wait()
		n.log.Info("node stopped")
	})
	return nil
}
