package node

import (
	"net"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/files/s3"
)

// s3Service builds the S3 API (--s3): the file API and the access keys
// are wired here, since a service imports no other (decision 0013).
func (n *Node) s3Service() (*s3.Service, error) {
	return s3.NewService(s3.Config{
		Addr: n.cfg.S3Addr,
		Files: func() s3.Files {
			if svc := n.files.svc.Load(); svc != nil {
				return svc
			}
			return nil
		},
		Keys:      nodeKeys{n},
		Anonymous: n.cfg.Auth.AnonymousRead,
		Open:      !n.authRequired(),
		Listen:    n.s3Listener,
		UploadTTL: n.cfg.S3UploadTTL,
		IsLeader:  func() bool { return n.cl != nil && n.cl.IsLeader() },
		// the client API's limits (clientHandler makes them, after this)
		Admission: func() (s3.Admission, s3.Admission) { return n.admission, n.writeAdmission },
	})
}

// s3Listener wraps the --s3 listener as the client ports are wrapped: at
// most --max-conns connections open at once (beyond, a 503 SlowDown in
// S3's XML, counted with the client ports' refusals), then TLS when the
// node has a certificate.
func (n *Node) s3Listener(ln net.Listener) net.Listener {
	return n.withTLS(n.limitConns("s3", ln, s3.RefuseConn))
}

// nodeKeys opens access keys with the node's authenticator, which exists
// once the node has opened its security model (before services start).
type nodeKeys struct{ n *Node }

func (k nodeKeys) KeySecret(id string) (auth.Principal, string, error) {
	return k.n.auth.authn.KeySecret(id)
}

// S3Addr is the address the S3 API listens on ("" without --s3).
func (n *Node) S3Addr() string {
	if n.s3 == nil {
		return ""
	}
	return n.s3.Addr()
}
