package node

import (
	"path/filepath"

	"github.com/mure-dev/mure/internal/cache/proxy"
)

// proxyService builds the caching proxy (--proxy): its disk tier lives in
// DATA/cache.
func (n *Node) proxyService() (*proxy.Service, error) {
	pc := *n.cfg.Proxy
	pc.Dir = filepath.Join(n.cfg.DataDir, "cache")
	pc.NoSync = n.cfg.NoSync
	pc.Listen, pc.TLS = n.withTLS, n.scheme() == "https"
	return proxy.NewService(pc)
}

// ProxyAddr is the address the caching proxy listens on ("" without --proxy).
func (n *Node) ProxyAddr() string {
	if n.proxy == nil {
		return ""
	}
	return n.proxy.Addr()
}
