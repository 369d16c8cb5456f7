package sessionhttp

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The committed assets of the browser terminal are what its lockfile
// builds (scripts/web-build.sh).
func TestTermBuildMatches(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed (scripts/test.sh installs it): cannot rebuild the terminal's assets to compare")
	}
	out := t.TempDir()
	if b, err := exec.Command("bash", "../../../scripts/web-build.sh", "web", out).CombinedOutput(); err != nil {
		t.Fatalf("web-build.sh: %v\n%s", err, b)
	}
	want, got := readTree(t, out), readTree(t, "web/dist")
	if len(want) != len(got) {
		t.Fatalf("committed build has %d files, a fresh build %d: run scripts/web-build.sh internal/sessions/sessionhttp/web and commit web/dist", len(got), len(want))
	}
	for name, b := range want {
		if !bytes.Equal(b, got[name]) {
			t.Errorf("web/dist/%s differs from a fresh build: run scripts/web-build.sh internal/sessions/sessionhttp/web and commit web/dist", name)
		}
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		m[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTickets(t *testing.T) {
	var ts tickets
	tk := ts.issue("alice", "s1")
	if _, ok := ts.take(tk, "s2"); ok {
		t.Fatal("a ticket for s1 opened s2")
	}
	tk = ts.issue("alice", "s1")
	if u, ok := ts.take(tk, "s1"); !ok || u != "alice" {
		t.Fatalf("take: %q %v", u, ok)
	}
	if _, ok := ts.take(tk, "s1"); ok {
		t.Fatal("a ticket was good twice")
	}
}
