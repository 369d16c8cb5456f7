package monitor

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestWebBuildMatches rebuilds the dashboard's assets from their sources
// and the lockfile (scripts/web-build.sh) and checks that the committed
// build, embedded in the binary, is exactly that.
func TestWebBuildMatches(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed (scripts/test.sh installs it): cannot rebuild the dashboard's assets to compare")
	}
	out := t.TempDir()
	cmd := exec.Command("bash", "../../scripts/web-build.sh", "web", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("web-build.sh: %v\n%s", err, b)
	}
	want, got := files(t, out), files(t, "web/dist")
	if !slices.Equal(keys(want), keys(got)) {
		t.Fatalf("committed build has %v, a fresh build %v: run scripts/web-build.sh and commit web/dist", keys(got), keys(want))
	}
	for name, b := range want {
		if !bytes.Equal(b, got[name]) {
			t.Errorf("web/dist/%s differs from a fresh build: run scripts/web-build.sh and commit web/dist", name)
		}
	}
}

func files(t *testing.T, dir string) map[string][]byte {
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

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
