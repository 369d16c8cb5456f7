package service

import (
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/meta"
)

// Env is what a node gives a service at Start. A service keeps what it
// needs; it must not use Env after its Stop returned.
type Env struct {
	// NodeID is this node's ID.
	NodeID string
	// PeerAddr is this node's advertised peer address (host:port): other
	// nodes reach it at that host.
	PeerAddr string
	// Routes is the client API: a service mounts its paths here (the node
	// adds authentication, admission and instrumentation around it).
	Routes *http.ServeMux
	// PeerRoutes is the node-to-node API, reached only through the
	// authenticated peer port.
	PeerRoutes *http.ServeMux
	// Metrics registers the service's collectors (names mure_<service>_...).
	Metrics prometheus.Registerer
	// Logger carries the node's ID and part=<service name>.
	Logger *slog.Logger
	// Cluster is the node's cluster seat: membership, raft, the state
	// machine, leases.
	Cluster *cluster.Cluster
	// Serve serves the client API on one more listener until the node
	// stops (the single-address mode's cluster address).
	Serve func(ln net.Listener)
}

// Settings returns the cluster-wide settings now (defaults included).
func (e Env) Settings() (s map[string]string) {
	e.Cluster.FSM().Read(func(st *meta.State) { s = st.Config() })
	return s
}
