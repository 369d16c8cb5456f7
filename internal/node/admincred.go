package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/meta"
)

// AdminTokenFile is the node's admin credential in its data directory: a
// bearer token of the user "admin", mode 0600 like the cluster key. The
// CLI run on the node's machine with --data DIR uses it.
const AdminTokenFile = "admin.token"

// AdminUser is the admin user every secured cluster has.
const AdminUser = "admin"

// AdminTokenPath returns where the node keeps its admin credential.
func (n *Node) AdminTokenPath() string { return filepath.Join(n.cfg.DataDir, AdminTokenFile) }

// adminTokenName is the name of this node's admin credential among the
// admin user's tokens.
func (n *Node) adminTokenName() string { return "node-" + n.id.NodeID }

// ensureAdminCredential gives the node an admin credential when it has
// none: a new cluster's first node at its first start, and every node of a
// cluster made before users existed at its first start with
// authentication on. The token is recorded (user "admin", token
// node-ID) before the file is written, so a file always holds a
// recorded token. It reports whether it made one.
func (n *Node) ensureAdminCredential(ctx context.Context) (bool, error) {
	path := n.AdminTokenPath()
	if _, err := os.Stat(path); err == nil {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tok := auth.NewToken()
	res, err := n.cl.ApplyOp(ctx, auth.AddUserOp(auth.User{Name: AdminUser, Admin: true, Created: auth.Now()}))
	if err != nil {
		return false, err
	}
	if res.Err != nil && !errors.Is(res.Err, meta.ErrPrecondition) { // an admin user exists already: add a token to it
		return false, res.Err
	}
	name := n.adminTokenName()
	// A token of that name from an earlier start whose file was lost (or
	// deleted to rotate it) is replaced.
	if res, err = n.cl.ApplyOp(ctx, auth.RevokeTokenOp(AdminUser, name)); err != nil {
		return false, err
	}
	rec := auth.Token{Name: name, User: AdminUser, Hash: auth.TokenHash(tok), Created: auth.Now()}
	if res, err = n.cl.ApplyOp(ctx, auth.AddTokenOp(rec)); err != nil {
		return false, err
	}
	if res.Err != nil {
		return false, res.Err
	}
	if err := writeFileAtomic(path, []byte(tok+"\n"), 0o600); err != nil {
		return false, err
	}
	n.log.Info("admin credential created", "file", path)
	return true, nil
}
