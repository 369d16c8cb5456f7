// Package webbuild checks, in tests, that a web front-end's committed
// build (WEBDIR/dist, embedded in the binary) is exactly what
// scripts/web-build.sh makes of its sources and its lockfile: the
// dashboard's (internal/monitor) and the browser terminal's
// (internal/sessions/sessionhttp).
package webbuild

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// Check rebuilds the assets of webDir (package.json, package-lock.json,
// src/, vendor.txt) with script into a temporary directory and compares
// them with webDir/dist, file by file. It skips when npm is not installed
// (scripts/test.sh installs it).
func Check(t testing.TB, script, webDir string) {
	t.Helper()
	rebuild := "scripts/web-build.sh " + webDir
	if root, err := filepath.Abs(filepath.Join(filepath.Dir(script), "..")); err == nil {
		if dir, err := filepath.Abs(webDir); err == nil {
			if rel, err := filepath.Rel(root, dir); err == nil {
				rebuild = "scripts/web-build.sh " + rel
			}
		}
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skipf("npm is not installed (scripts/test.sh installs it): cannot rebuild %s's assets to compare", webDir)
	}
	out := t.TempDir()
	if b, err := exec.Command("bash", script, webDir, out).CombinedOutput(); err != nil {
		t.Fatalf("web-build.sh: %v\n%s", err, b)
	}
	want, got := readTree(t, out), readTree(t, filepath.Join(webDir, "dist"))
	if w, g := slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)); !slices.Equal(w, g) {
		t.Fatalf("committed build has %v, a fresh build %v: run %s and commit its dist", g, w, rebuild)
	}
	for name, b := range want {
		if !bytes.Equal(b, got[name]) {
			t.Errorf("%s/dist/%s differs from a fresh build: run %s and commit its dist", webDir, name, rebuild)
		}
	}
}

// readTree returns the files under dir by their path relative to it.
func readTree(t testing.TB, dir string) map[string][]byte {
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
