package node

import (
	"os"
	"path/filepath"
	"strings"
)

// ClientURLFile is the file in a node's data directory that holds the URL
// of its client API for programs on its machine (written at every start):
// the CLI given --data DIR and no --node talks to that node, wherever it
// listens (docs/access.md, "Locality").
const ClientURLFile = "client.url"

// writeClientURL records clientURL in the data directory.
func (n *Node) writeClientURL() error {
	return writeFileAtomic(filepath.Join(n.cfg.DataDir, ClientURLFile), []byte(n.clientURL()+"\n"), 0o644)
}

// ReadClientURL returns the client API URL the node with data directory
// dir recorded ("" when it recorded none).
func ReadClientURL(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, ClientURLFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
