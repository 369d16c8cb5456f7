package certs

import (
	"os"
	"path/filepath"
	"testing"
)

// A renewal over a key file readable by others leaves it 0600.
func TestIssueKeyMode(t *testing.T) {
	dir := t.TempDir()
	if err := InitCA(dir, "test CA"); err != nil {
		t.Fatal(err)
	}
	crt, key := filepath.Join(dir, "n.crt"), filepath.Join(dir, "n.key")
	if err := os.WriteFile(key, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Issue(dir, []string{"127.0.0.1"}, 1, crt, key); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{key, filepath.Join(dir, CAKey)} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(f), fi.Mode().Perm())
		}
	}
	if _, err := NewHolder(crt, key); err != nil {
		t.Fatal(err)
	}
}
