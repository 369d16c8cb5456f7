package node

import (
	"net/http"

	"github.com/mure-dev/mure/internal/auth/authhttp"
	"github.com/mure-dev/mure/internal/files/webdav"
)

// webdavService builds the WebDAV face (--webdav): the file API and the
// node's guard are wired here, since a service imports no other (decision
// 0013).
func (n *Node) webdavService() (*webdav.Service, error) {
	cfg := webdav.Config{
		Addr: n.cfg.WebDAVAddr,
		Files: func() webdav.Files {
			if svc := n.files.svc.Load(); svc != nil {
				return svc
			}
			return nil
		},
		Open:   !n.authRequired(),
		Listen: n.withTLS,
	}
	if n.authRequired() {
		cfg.Guard = n.webdavGuard
	}
	return webdav.NewService(cfg)
}

// webdavGuard is the client API's guard with WebDAV's classification:
// the same credentials, failed-login limits and audit log.
func (n *Node) webdavGuard(next http.Handler) http.Handler {
	g := n.auth.guard
	dav := &authhttp.Guard{Auth: g.Auth, Classify: webdav.Classify, Limiter: g.Limiter, Anonymous: g.Anonymous,
		Audit: g.Audit, Current: g.Current, Hint: "a user's password or an access key by Basic, over TLS or from this machine; or a bearer token"}
	return dav.Wrap(next)
}

// WebDAVAddr is the address WebDAV listens on ("" without --webdav).
func (n *Node) WebDAVAddr() string {
	if n.webdav == nil {
		return ""
	}
	return n.webdav.Addr()
}
