package node

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/frontdoor"
)

// The monitoring port (Config.UIAddr, --ui-addr): the dashboard, the
// history, the metrics, the status and the health probes on a listener
// of their own, served by net/http with no front, no admission and a
// connection budget of their own. On the client port an overloaded node
// keeps thousands of connections waiting for the accept loop, the front
// and net/http's hand-over, and a dashboard's connection waits in that
// line with them; here it waits for nothing but the CPU
// (docs/decisions/0044-dashboard-under-overload.md).

// uiMaxConns bounds the connections open on the monitoring port: room
// for the dashboards a node feeds (64 event streams) and their other
// requests, scrapers and `mure top`, while a client that floods the port
// cannot take more than that.
const uiMaxConns = 256

// uiPaths are what the monitoring port serves: "/" (a browser is sent to
// /ui/) and these paths with everything under them.
var uiPaths = []string{"/ui", "/history", "/metrics", "/status", "/healthz", "/readyz"}

// isUIPath says whether the monitoring port serves path.
func isUIPath(path string) bool {
	if path == "/" {
		return true
	}
	for _, p := range uiPaths {
		if strings.HasPrefix(path, p) && (len(path) == len(p) || path[len(p)] == '/') {
			return true
		}
	}
	return false
}

// uiOnly answers what the monitoring port does not serve with a 404 that
// names the client port.
func (n *Node) uiOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isUIPath(r.URL.Path) {
			api.Error(w, http.StatusNotFound, api.CodeRouteNotFound, fmt.Sprintf(
				"%s is not served on the monitoring port (--ui-addr), which has /ui/, /history, /metrics, /status, /healthz and /readyz: the client API is at %s://%s",
				r.URL.Path, n.scheme(), n.advertiseHTTP()))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// listenUI opens the monitoring port, when configured.
func (n *Node) listenUI() error {
	if n.cfg.UIAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", n.cfg.UIAddr)
	if err != nil {
		return fmt.Errorf("monitoring port %s: %w", n.cfg.UIAddr, err)
	}
	n.uiLn = frontdoor.LimitConns(n.prompted(ln), uiMaxConns, func(string) {})
	return nil
}

// UIAddr is the monitoring port's address ("" without one).
func (n *Node) UIAddr() string {
	if n.uiLn == nil {
		return ""
	}
	return n.uiLn.Addr().String()
}
