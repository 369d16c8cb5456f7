package node

import (
	"net"
	"path/filepath"

	"github.com/mure-dev/mure/internal/cache/proxy"
)

// proxyService builds the caching proxy (--proxy): its disk tier lives in
// DATA/cache, and its ports hold at most --max-conns connections each, as
// the client ports do (beyond, a new connection is answered 503 and
// counted with theirs).
func (n *Node) proxyService() (*proxy.Service, error) {
	pc := *n.cfg.Proxy
	pc.Dir = filepath.Join(n.cfg.DataDir, "cache")
	pc.NoSync = n.cfg.NoSync
	pc.TLS = n.scheme() == "https"
	pc.Listen = func(ln net.Listener) net.Listener { return n.withTLS(n.limitConns("proxy", ln, nil)) }
	return proxy.NewService(pc)
}

// ProxyAddr is the address the caching proxy listens on ("" without --proxy).
func (n *Node) ProxyAddr() string {
	if n.proxy == nil {
		return ""
	}
	return n.proxy.Addr()
}
