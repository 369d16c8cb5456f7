package node

import (
	"context"
	"errors"
	"fmt"

	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mure-dev/mure/internal/admission"
	"github.com/mure-dev/mure/internal/apps"
	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/cache/proxy"
	"github.com/mure-dev/mure/internal/cache/purge"
	"github.com/mure-dev/mure/internal/certs"
	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/dispatch"
	"github.com/mure-dev/mure/internal/dsc"
	"github.com/mure-dev/mure/internal/files"
	"github.com/mure-dev/mure/internal/files/filehttp"
	"github.com/mure-dev/mure/internal/files/s3"
	"github.com/mure-dev/mure/internal/files/webdav"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/hostload"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/monitor"
	"github.com/mure-dev/mure/internal/service"
	"github.com/mure-dev/mure/internal/sessions"
	"github.com/mure-dev/mure/internal/sessions/sessionhttp"
	"github.com/mure-dev/mure/internal/store"
	"github.com/mure-dev/mure/internal/transport"
)

// Node is one running mure node: a cluster seat and the services built on
// it (files, apps, the client API, the front door, the single-address
// agent), started in that order and stopped in reverse.
type Node struct {
	cfg     Config
	log     *slog.Logger
	id      identity
	mux     *transport.Mux
	cl      *cluster.Cluster
	st      *store.Store
	reg     *prometheus.Registry
	httpLn  net.Listener
	httpSrv *http.Server
	fastLn  net.Listener
	uiLn    net.Listener // the monitoring port (nil without --ui-addr)
	// prompts are the listeners whose accept loops the front's busy
	// connections wake (prompt.go), set before the servers start.
	prompts []*filehttp.PromptListener
	uiSrv   *http.Server
	pprof   *http.Server
	load    *hostload.Reader
	peerSrv *http.Server
	// routes and peerRoutes are the client and peer APIs' muxes, where
	// services mount their paths.
	routes, peerRoutes *http.ServeMux

	svcs  services
	files *filesService
	api   *apiService
	auth  *nodeAuth
	certs *certs.Holder // nil without TLS on the client ports
	// admission is the client API's admission control (clientHandler).
	admission *admission.Limiter
	door      *frontdoor.Service   // nil without a front door
	s3        *s3.Service          // nil without --s3
	proxy     *proxy.Service       // nil without --proxy
	webdav    *webdav.Service      // nil without --webdav
	sessions  *sessionhttp.Service // persistent sessions (the dashboard lists them)
	single    *dsc.Service         // single-address mode only
	monitor   *monitor.Service
	mon       *monitorReader // what the monitor reads of this node

	// writeAdmission is the admission control of the client API's writes
	// (clientHandler); S3's writes take its slots too.
	writeAdmission *admission.Limiter

	// conns counts the client connections net/http holds on the main port
	// (direct and handed over); openConns adds the others, and is
	// gossiped as the node's load.
	conns      atomic.Int64
	refused    atomic.Int64 // client connections refused over MaxConns
	ports      clientPorts  // each client-facing listener's open connections
	handedOver *prometheus.CounterVec
	// NewKey is set when this start created the cluster key; NewAdmin
	// when it created the admin credential (AdminTokenPath).
	NewKey, NewAdmin bool

	left      chan struct{}
	leftOnce  sync.Once
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
}

// Open starts a node: it returns once the node serves its APIs and has
// joined (or founded) its cluster. On an error, whatever it had started is
// stopped again.
func Open(ctx context.Context, cfg Config) (_ *Node, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	n := &Node{cfg: cfg, left: make(chan struct{}), reg: prometheus.NewRegistry(), routes: http.NewServeMux(), peerRoutes: http.NewServeMux()}
	defer func() {
		if err != nil {
			if terr := n.teardown(context.Background()); terr != nil {
				err = errors.Join(err, terr)
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
	// Every service's configuration is checked before a port opens.
	n.api = newAPIService(n, key)
	all, err := n.buildServices(key)
	if err != nil {
		return nil, err
	}

	n.mux, err = transport.Listen(transport.Config{BindAddr: cfg.PeerAddr, AdvertiseAddr: cfg.Advertise, Key: key, Logger: n.log.With("part", "transport")})
	if err != nil {
		return nil, fmt.Errorf("peer port %s: %w", cfg.PeerAddr, err)
	}
	if cfg.DebugFaults {
		n.mux.EnableFaults()
	}
	if err := n.listenClient(); err != nil {
		return nil, err
	}

	n.st, err = store.Open(filepath.Join(cfg.DataDir, "store"), store.Options{NoSync: cfg.NoSync, CacheBytes: cfg.CacheBytes, FS: cfg.StoreFS})
	if err != nil {
		return nil, err
	}

	n.files.st = n.st
	n.load = hostload.Open()
	sampler := &loadSampler{r: n.load, conns: n.openConns, sim: cfg.DebugHostFigures, id: id.NodeID, dataDir: cfg.DataDir}
	n.cl, err = cluster.Open(ctx, cluster.Config{
		NodeID: id.NodeID, ClusterID: id.ClusterID, Dir: cfg.DataDir, LogFS: cfg.LogFS, NoSync: cfg.NoSync, HTTPAddr: n.advertiseHTTP(),
		Zone: cfg.Zone, Mux: n.mux, Key: key, Join: cfg.Join, Bootstrap: founding, Timing: cfg.Timing, Load: sampler.take,
		Logger: n.log.With("part", "cluster"), Barrier: n.files.barrier, Parts: Parts(),
	})
	if err != nil {
		return nil, err
	}
	if id.ClusterID == "" {
		id.ClusterID = n.cl.ClusterID()
	}
	n.id = id
	if err := saveIdentity(cfg.DataDir, id); err != nil {
		return nil, err
	}
	n.registerMetrics()
	if err := n.openAuth(key); err != nil {
		return nil, err
	}
	n.peerSrv = &http.Server{Handler: n.peerHandler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: discardLog()}
	client, ui := n.clientHandlers()
	if n.uiLn != nil {
		n.uiSrv = &http.Server{Handler: ui, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: discardLog()}
	}
	n.httpSrv = &http.Server{Handler: client, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: discardLog(),
		ConnState: n.countConn}
	env := service.Env{NodeID: id.NodeID, PeerAddr: n.mux.Addr(), Routes: n.routes, PeerRoutes: n.peerRoutes, Metrics: n.reg, Logger: n.log,
		Cluster: n.cl, Serve: func(ln net.Listener) { n.serve(n.httpSrv, n.withTLS(ln)) }}
	if err := n.svcs.start(ctx, env, all...); err != nil {
		return nil, err
	}
	if err := n.startPprof(); err != nil {
		return nil, err
	}
	if n.authRequired() {
		if n.NewAdmin, err = n.ensureAdminCredential(ctx); err != nil {
			// Not fatal: the node serves; another start will try again.
			n.log.Warn("could not create this node's admin credential; it will be tried at the next start", "err", err)
		}
	}
	if err := n.writeClientURL(); err != nil {
		n.log.Warn("could not record the client API's address in the data directory (mure --data DIR will need --node)", "err", err)
	}
	n.log.Info("node started", "zone", cfg.Zone, "http", n.advertiseHTTP(), "fast", cfg.FastHTTPAddr, "peer", n.mux.Addr(), "cluster", id.ClusterID, "data", cfg.DataDir,
		"services", n.serviceNames())
	return n, nil
}

// buildServices returns the configured services in start order, their
// configurations checked: files and apps mount their routes, then the peer
// and client APIs open (api), then the front door and the single-address
// agent, which hand connections to the client API, then Config.Extra.
func (n *Node) buildServices(key transport.Key) ([]Service, error) {
	cfg := n.cfg
	n.files = &filesService{cfg: files.Config{MaxBody: cfg.MaxBody, UnsafeReads: cfg.DebugUnsafeReads, Explain: cfg.DebugFaults,
		ScrubPeriod: cfg.ScrubPeriod, ScrubRate: float64(cfg.ScrubRate), LeaseWait: cfg.Timing.ReadLease}}
	a, err := apps.NewService(apps.Config{CGIDir: cfg.CGIDir, CGITimeout: cfg.CGITimeout, CGINice: cfg.CGINice, CGIMaxRunning: cfg.CGIMaxRunning,
		Proxies: cfg.Apps, Token: cfg.Token})
	if err != nil {
		return nil, err
	}
	sc := cfg.Sessions
	sc.Dir = filepath.Join(cfg.DataDir, "sessions")
	sc.NodeURL, sc.NodeCA = n.clientURL, n.clientCA
	sess, err := sessionhttp.NewService(sc)
	if err != nil {
		return nil, err
	}
	n.sessions = sess
	// The monitor after the API: it stops first, ending the dashboard's
	// event streams before the API's server waits for its requests.
	n.monitor = n.monitorService()
	all := []Service{n.files, a, sess, n.api, n.monitor}
	if cfg.S3Addr != "" {
		if n.s3, err = n.s3Service(); err != nil {
			return nil, err
		}
		all = append(all, n.s3)
	}
	if cfg.Proxy != nil {
		if n.proxy, err = n.proxyService(); err != nil {
			return nil, err
		}
		all = append(all, n.proxy)
	}
	if cfg.WebDAVAddr != "" {
		if n.webdav, err = n.webdavService(); err != nil {
			return nil, err
		}
		all = append(all, n.webdav)
	}
	if cfg.Front == nil {
		return append(all, cfg.Extra...), nil
	}
	fc := *cfg.Front
	fc.Key = key.HandoverKey()
	fc.Local = n.api.deliver
	fc.PolicyOverride = func() (p string) {
		n.cl.FSM().Read(func(st *meta.State) { p = dispatch.PolicySetting(st.Config()) })
		return p
	}
	fc.OnRole = func(bool) {
		if n.single != nil {
			n.single.RoleChanged()
		}
	}
	door, err := frontdoor.NewService(fc)
	if err != nil {
		return nil, err
	}
	n.door = door
	all = append(all, door)
	if fc.Mode == frontdoor.ModeSingleAddress {
		if n.single, err = n.singleAddress(fc, key.HandoverKey()); err != nil {
			return nil, err
		}
		all = append(all, n.single)
	}
	return append(all, cfg.Extra...), nil
}

// Parts returns the state machine's namespaces besides the core. Every
// binary registers every one, whatever its configuration
// (docs/decisions/0012-versioned-namespaces.md).
func Parts() []meta.Part {
	return []meta.Part{auth.NewPart(), webdav.NewLockPart(), sessions.NewPart(), purge.NewPart()}
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

// clientURL is the client API's URL for a program on this machine (a
// session's: mure run), once the API listens.
func (n *Node) clientURL() string {
	if n.httpLn == nil {
		return ""
	}
	if n.cfg.TLSCert != "" {
		return "https://" + n.advertiseHTTP()
	}
	return "http://" + n.advertiseHTTP()
}

// clientCA is the PEM of the CA the client ports' certificate chains to,
// when its file holds it ("" without TLS or without it: certs.Holder.CAPEM).
func (n *Node) clientCA() string {
	if n.certs == nil {
		return ""
	}
	return string(n.certs.CAPEM())
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

// connRefused counts a connection refused over MaxConns.
func (n *Node) connRefused(string) { n.refused.Add(1) }

// limitConns bounds a client-facing listener (the client ports, --s3,
// --proxy) to --max-conns connections open at once (0: no bound); beyond,
// a new one is refused at once, counted by connRefused, with answer's
// response (nil: the 503 in JSON). The listener's open connections are
// counted, bounded or not, as port in /status (ports.go).
func (n *Node) limitConns(port string, ln net.Listener, answer func(c net.Conn, msg string)) net.Listener {
	l := frontdoor.LimitConnsAnswer(ln, n.cfg.MaxConns, n.connRefused, answer)
	n.ports.add(port, l)
	return l
}

// serviceNames lists the running services in start order.
func (n *Node) serviceNames() []string {
	var names []string
	for _, s := range n.svcs.list() {
		names = append(names, s.Name())
	}
	return names
}

// Door returns the node's front door (nil when it has none).
func (n *Node) Door() *frontdoor.Door {
	if n.door == nil {
		return nil
	}
	return n.door.Door()
}

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

// Transport exposes the node's peer transport (tests: its fault seams).
func (n *Node) Transport() *transport.Mux { return n.mux }

// Left is closed when the node has left the cluster (mure node leave).
func (n *Node) Left() <-chan struct{} { return n.left }

// Close stops the node: its services in reverse order (the single-address
// agent and the front door first, then the client API, whose in-flight
// requests get up to ctx's deadline, the apps and the file service), then
// the peer API, the cluster seat, the store and the peer port. It returns
// the services' errors, joined; later calls return the same.
func (n *Node) Close(ctx context.Context) error {
	n.closeOnce.Do(func() {
		n.closeErr = n.teardown(ctx)
		n.log.Info("node stopped", "err", n.closeErr)
	})
	return n.closeErr
}

// teardown stops whatever Open started, in reverse order: the services,
// then the profiler, the peer API, the cluster seat, the store, the client
// ports (closed already when the api service ran) and the peer port. It is
// both Close and the unwinding of a failed Open, so it skips what was not
// started. It returns the errors of the services, the seat and the store.
func (n *Node) teardown(ctx context.Context) error {
	err := n.svcs.stop(ctx)
	if n.pprof != nil {
		_ = n.pprof.Close()
	}
	if n.peerSrv != nil {
		_ = n.peerSrv.Shutdown(ctx)
	}
	if n.cl != nil {
		err = errors.Join(err, n.cl.Close())
	}
	if n.st != nil {
		err = errors.Join(err, n.st.Close())
	}
	if n.httpLn != nil {
		n.closeClientListeners()
	}
	if n.mux != nil {
		n.mux.Close()
	}
	n.wg.Wait()
	n.closeAuth()
	return err
}
