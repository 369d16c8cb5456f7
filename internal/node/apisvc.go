package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/internal/certs"
	"github.com/mure-dev/mure/internal/files/filehttp"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/service"
	"github.com/mure-dev/mure/internal/transport"
)

// apiService is the node's client API as a service ("api"): the main port
// (with connections a front door hands over), the front door's local
// deliveries, the fast read lane, and the peer API. It starts after the
// services that mount routes and before those that send it connections.
type apiService struct {
	n     *Node
	key   transport.Key
	local atomic.Pointer[frontdoor.LocalListener]
	fast  atomic.Pointer[filehttp.FastLane]

	mu     sync.Mutex
	fronts []*filehttp.Front
}

func newAPIService(n *Node, key transport.Key) *apiService { return &apiService{n: n, key: key} }

// deliver hands a connection the front door sent to this very node to the
// client API's server (false: not serving).
func (a *apiService) deliver(c net.Conn) bool {
	if l := a.local.Load(); l != nil {
		return l.Deliver(c)
	}
	return false
}

func (a *apiService) Name() string { return "api" }

func (a *apiService) Start(_ context.Context, _ service.Env) error {
	n := a.n
	// Connections a front door relays here start with a signed preamble;
	// the others pass unchanged (docs/dispatch.md).
	verifier := &frontdoor.Verifier{Key: a.key.HandoverKey(), Dispatcher: func() string { id, _ := n.cl.Dispatcher(); return id },
		Leader: func() string { id, _ := n.cl.Leader(); return id }}
	n.serve(n.peerSrv, n.mux.HTTPListener())
	n.serve(n.httpSrv, a.listen(frontdoor.AcceptHandovers(n.httpLn, verifier, func(reason string) { n.handedOver.WithLabelValues(reason).Inc() })))
	if n.cfg.Front != nil {
		// Connections the policy sends to this node itself go to its own
		// server without a relay.
		local := frontdoor.NewLocalListener(n.httpLn.Addr())
		a.local.Store(local)
		n.serve(n.httpSrv, a.listen(local))
	}
	if n.uiSrv != nil {
		n.serve(n.uiSrv, n.withTLS(n.uiLn))
	}
	if n.fastLn != nil {
		fast := filehttp.NewFastLane(n.files.svc.Load(), n.scheme()+"://"+n.advertiseHTTP(), n.fastAllow(), max(n.cfg.MaxInFlight, 256)*16)
		a.fast.Store(fast)
		ln := n.withTLS(n.fastLn)
		n.wg.Go(func() {
			if err := fast.Serve(ln); err != nil {
				n.log.Error("fast read lane stopped", "err", err)
			}
		})
	}
	return nil
}

// front puts the file service's front before net/http on ln: plain reads
// of local copies are answered there, everything else by net/http
// (filehttp.Front, docs/decisions/0018-front.md).
func (a *apiService) front(ln net.Listener) net.Listener {
	n := a.n
	web := n.files.web.Load()
	if web == nil {
		return ln
	}
	f := web.NewFront(ln, filehttp.FrontOptions{Allow: n.fastAllow(), Slots: n.admission, IdleTimeout: n.httpSrv.IdleTimeout, HeaderTimeout: n.httpSrv.ReadHeaderTimeout, Prompt: n.prompt})
	a.mu.Lock()
	a.fronts = append(a.fronts, f)
	a.mu.Unlock()
	return f
}

// Stop closes the client ports; in-flight requests get until ctx ends.
func (a *apiService) Stop(ctx context.Context) error {
	var errs []error
	if fast := a.fast.Load(); fast != nil {
		errs = append(errs, fast.Shutdown(ctx))
	}
	if a.n.uiSrv != nil {
		errs = append(errs, a.n.uiSrv.Shutdown(ctx))
	}
	errs = append(errs, a.n.httpSrv.Shutdown(ctx))
	return errors.Join(errs...)
}

// APIStatus is the client API's part of /status.
type APIStatus struct {
	// Connections is the client connections open on the node's
	// client-facing ports: the client API's and the fast lane's (as their
	// servers count them, with those a front door hands over), --s3's and
	// --proxy's; Refused, those refused over --max-conns since the start.
	Connections int   `json:"connections"`
	Refused     int64 `json:"refused"`
	// Ports is each client-facing listener's open connections, as
	// --max-conns counts them (the client port's count includes the
	// connections not yet handed to a server).
	Ports []PortConns `json:"ports,omitempty"`
	Fast  string      `json:"fast,omitempty"`
	// UI is the monitoring port's address (--ui-addr), when it has one.
	UI string `json:"ui,omitempty"`
	// FrontServed is the plain reads the front answered itself since the
	// start (the others went to net/http; docs/decisions/0018-front.md).
	FrontServed uint64 `json:"front_served"`
	// FrontRefused is the reads the front refused itself with 503
	// overloaded (admission had no slot and no waiting place), without
	// handing the connection to net/http.
	FrontRefused uint64 `json:"front_refused"`
	// PromptedAccepts is how many times the front's busy connections woke
	// an accept loop (the client port's, the monitoring port's) because a
	// new connection waited (docs/decisions/0067-prompt-accepts.md).
	PromptedAccepts uint64 `json:"prompted_accepts"`
	// TLSUntil is when the client ports' certificate expires (zero: no
	// TLS).
	TLSUntil time.Time `json:"tls_until,omitzero"`
}

func (a *apiService) Status() any {
	st := APIStatus{Connections: a.n.openConns(), Refused: a.n.refused.Load(), Ports: a.n.ports.each(), Fast: a.n.FastAddr(), UI: a.n.UIAddr(), PromptedAccepts: a.n.promptCount()}
	a.mu.Lock()
	for _, f := range a.fronts {
		st.FrontServed += f.Served()
		st.FrontRefused += f.Refused()
	}
	a.mu.Unlock()
	if a.n.certs != nil {
		st.TLSUntil = a.n.certs.NotAfter()
	}
	return st
}

// openConns returns the client connections open on the client-facing
// ports: on both client ports (net/http's, the fronts' and the fast
// lane's), on --s3's and on --proxy's.
func (n *Node) openConns() int {
	c := int(n.conns.Load()) + n.ports.others()
	if n.api != nil {
		if fast := n.api.fast.Load(); fast != nil {
			c += fast.OpenConnections()
		}
		n.api.mu.Lock()
		for _, f := range n.api.fronts {
			c += f.OpenConnections()
		}
		n.api.mu.Unlock()
	}
	return c
}

// listenClient opens the client ports: the API's and the fast lane's.
func (n *Node) listenClient() error {
	cfg := n.cfg
	var err error
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return errors.New("TLS needs both a certificate and a key (--tls-cert and --tls-key)")
	}
	if cfg.TLSCert != "" {
		if n.certs, err = certs.NewHolder(cfg.TLSCert, cfg.TLSKey); err != nil {
			return err
		}
	}
	if n.httpLn, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		return fmt.Errorf("client API port %s: %w", cfg.HTTPAddr, err)
	}
	n.httpLn = n.limitConns("client", n.prompted(n.httpLn), nil)
	if cfg.FastHTTPAddr != "" {
		if n.fastLn, err = net.Listen("tcp", cfg.FastHTTPAddr); err != nil {
			n.httpLn.Close()
			return fmt.Errorf("fast read lane port %s: %w", cfg.FastHTTPAddr, err)
		}
		n.fastLn = n.limitConns("fast", n.fastLn, nil)
	}
	if err := n.listenUI(); err != nil {
		n.closeClientListeners()
		return err
	}
	return nil
}

func (n *Node) closeClientListeners() {
	n.httpLn.Close()
	if n.uiLn != nil {
		n.uiLn.Close()
	}
	if n.fastLn != nil {
		n.fastLn.Close()
	}
}

// startPprof serves Go's profiler on cfg.PprofAddr, when set.
func (n *Node) startPprof() error {
	if n.cfg.PprofAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", n.cfg.PprofAddr)
	if err != nil {
		return fmt.Errorf("profiler port %s: %w", n.cfg.PprofAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	n.pprof = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: discardLog()}
	n.serve(n.pprof, ln)
	return nil
}

// listen wraps a client listener: in TLS when the node has a certificate
// (net/http then answers everything: the front reads plain text only),
// else in the front.
func (a *apiService) listen(ln net.Listener) net.Listener {
	if a.n.certs != nil {
		return a.n.withTLS(ln)
	}
	return a.front(ln)
}

// withTLS wraps a client listener in TLS when the node has a certificate.
func (n *Node) withTLS(ln net.Listener) net.Listener {
	if n.certs == nil {
		return ln
	}
	return tls.NewListener(ln, n.certs.Config())
}

// scheme is the client ports' URL scheme.
func (n *Node) scheme() string {
	if n.certs != nil {
		return "https"
	}
	return "http"
}

// ReloadTLS reads the client ports' certificate and key files again (on
// SIGHUP): new connections get the new pair. Without TLS it does nothing.
func (n *Node) ReloadTLS() error {
	if n.certs == nil {
		return nil
	}
	if err := n.certs.Reload(); err != nil {
		return err
	}
	n.log.Info("TLS certificate reloaded", "until", n.certs.NotAfter())
	return nil
}
