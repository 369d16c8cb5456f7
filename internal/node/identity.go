package node

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mure-dev/mure/internal/transport"
)

// identity is what a data directory remembers about its node.
type identity struct {
	NodeID    string `json:"node_id"`
	ClusterID string `json:"cluster_id,omitempty"`
}

const (
	identityFile = "node.json"
	keyFile      = "cluster.key"
)

// ErrKeyMismatch: the key given does not match the one in the data dir.
var ErrKeyMismatch = errors.New("the cluster key given differs from the one in the data directory")

func loadIdentity(dir string) (identity, bool, error) {
	var id identity
	b, err := os.ReadFile(filepath.Join(dir, identityFile))
	if errors.Is(err, os.ErrNotExist) {
		return id, false, nil
	}
	if err != nil {
		return id, false, fmt.Errorf("read %s: %w", identityFile, err)
	}
	if err := json.Unmarshal(b, &id); err != nil || id.NodeID == "" {
		return id, false, fmt.Errorf("%s in %s is damaged: %v", identityFile, dir, err)
	}
	return id, true, nil
}

func saveIdentity(dir string, id identity) error {
	b, _ := json.MarshalIndent(id, "", "  ")
	return writeFileAtomic(filepath.Join(dir, identityFile), append(b, '\n'), 0o600)
}

// loadKey returns the cluster key: the one given, else the data
// directory's, else a new one when create is set.
func loadKey(dir, given string, create bool) (transport.Key, bool, error) {
	path := filepath.Join(dir, keyFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		k, perr := transport.ParseKey(strings.TrimSpace(string(b)))
		if perr != nil {
			return k, false, fmt.Errorf("%s is damaged: %w", path, perr)
		}
		if given != "" && strings.TrimSpace(given) != k.String() {
			return k, false, fmt.Errorf("%w (%s)", ErrKeyMismatch, path)
		}
		return k, false, nil
	case !errors.Is(err, os.ErrNotExist):
		return transport.Key{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	var k transport.Key
	switch {
	case given != "":
		if k, err = transport.ParseKey(strings.TrimSpace(given)); err != nil {
			return k, false, fmt.Errorf("cluster key: %w", err)
		}
	case create:
		if k, err = transport.NewKey(); err != nil {
			return k, false, err
		}
	default:
		return k, false, errors.New("joining a cluster needs its key: pass --key-file FILE (the first node's DATA/cluster.key) or set MURE_KEY")
	}
	if err := writeFileAtomic(path, []byte(k.String()+"\n"), 0o600); err != nil {
		return k, false, err
	}
	return k, given == "", nil
}

func newID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writeFileAtomic writes data to path with mode through a synced temporary
// file and a rename: a crash leaves the old file or the new, never half.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// A leftover tmp keeps its mode through O_TRUNC: set ours before
	// writing, so a secret is never readable more widely than asked.
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
