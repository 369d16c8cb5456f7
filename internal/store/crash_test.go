package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Debris that a crash can leave in blobs/ is cleaned up by Open.
func TestOpenRecoversDebris(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true, SmallMax: -1})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "ok", "v1", []byte("good"))
	put(t, s, "orphan-data", "v1", []byte("removal interrupted"))
	put(t, s, "mixed", "v1", []byte("stays"))
	s.Close()

	l := s.locate("orphan-data")
	os.Remove(l.meta("v1")) // data file without sidecar
	m := s.locate("mixed")
	os.WriteFile(m.meta("v2"), []byte("commit interrupted"), 0o644) // sidecar without data
	n := s.locate("never-committed")
	os.MkdirAll(n.dir, 0o755)
	os.WriteFile(n.meta("v1"), []byte("x"), 0o644)

	s = openStore(t, dir, Options{NoSync: true, SmallMax: -1})
	if nb, b := s.Usage(); nb != 2 || b != int64(len("good")+len("stays")) {
		t.Errorf("Usage = %d, %d", nb, b)
	}
	if _, err := s.Open("orphan-data", "v1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("data without sidecar still visible: %v", err)
	}
	for _, f := range []string{l.data("v1"), m.meta("v2"), n.dir} {
		if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not cleaned up: %v", f, err)
		}
	}
	if got := readAll(t, s, "mixed", "v1"); string(got) != "stays" {
		t.Errorf("mixed/v1 = %q", got)
	}
}

func TestDetectCorruption(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{NoSync: true, CacheBytes: 1 << 20, SmallMax: -1})
	data := []byte("the original content")
	put(t, s, "p", "v1", data)
	readAll(t, s, "p", "v1") // cached
	l := s.locate("p")
	quarantined := filepath.Join(dir, quarantineDir, l.hash()+"-v1")

	// Same-size bit rot: Stat cannot see it, Verify does, and quarantines
	// the blob: it is no longer served, from the cache either.
	bad := []byte("the originaX content")
	if err := os.WriteFile(l.data("v1"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat("p", "v1"); err != nil {
		t.Errorf("Stat: %v", err)
	}
	err := s.Verify("p", "v1")
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("Verify = %v, want ErrChecksum", err)
	}
	if _, err := s.Open("p", "v1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open after a failed Verify = %v, want ErrNotFound", err)
	}
	if got, err := os.ReadFile(quarantined); err != nil || !bytes.Equal(got, bad) {
		t.Errorf("quarantined copy = %q, %v; want the corrupt bytes", got, err)
	}
	if _, err := os.Stat(quarantined + metaSuffix); err != nil {
		t.Errorf("quarantined sidecar: %v", err)
	}
	if n, b := s.Usage(); n != 0 || b != 0 {
		t.Errorf("Usage after quarantine = %d, %d", n, b)
	}
	if c := s.Checks(); c.Corrupt != 1 {
		t.Errorf("Checks().Corrupt = %d, want 1", c.Corrupt)
	}
	// Committing the right content again heals it.
	put(t, s, "p", "v1", data)
	if err := s.Verify("p", "v1"); err != nil {
		t.Errorf("Verify after heal: %v", err)
	}
	if got := readAll(t, s, "p", "v1"); string(got) != string(data) {
		t.Errorf("after heal got %q", got)
	}

	// Truncation and a damaged sidecar are caught by Stat, and by Verify,
	// which quarantines them.
	os.WriteFile(l.data("v1"), data[:5], 0o644)
	if _, err := s.Stat("p", "v1"); !errors.Is(err, ErrChecksum) {
		t.Errorf("Stat truncated = %v, want ErrChecksum", err)
	}
	if _, err := s.List("p"); !errors.Is(err, ErrChecksum) {
		t.Errorf("List truncated = %v, want ErrChecksum", err)
	}
	if err := s.Verify("p", "v1"); !errors.Is(err, ErrChecksum) {
		t.Errorf("Verify truncated = %v, want ErrChecksum", err)
	}
	put(t, s, "p", "v1", data)
	os.WriteFile(l.meta("v1"), []byte("garbage"), 0o644)
	if _, err := s.Stat("p", "v1"); !errors.Is(err, ErrChecksum) {
		t.Errorf("Stat bad sidecar = %v, want ErrChecksum", err)
	}
	if err := s.Verify("p", "v1"); !errors.Is(err, ErrChecksum) {
		t.Errorf("Verify bad sidecar = %v, want ErrChecksum", err)
	}
	if _, err := s.Stat("p", "v1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat after quarantine = %v, want ErrNotFound", err)
	}
	put(t, s, "p", "v1", data)
	if err := s.Verify("p", "v1"); err != nil {
		t.Errorf("Verify after recommit: %v", err)
	}
	if nb, b := s.Usage(); nb != 1 || b != int64(len(data)) {
		t.Errorf("Usage = %d, %d", nb, b)
	}
	if c := s.Checks(); c.Corrupt != 3 {
		t.Errorf("Checks().Corrupt = %d, want 3", c.Corrupt)
	}
}

func TestMetaRoundTrip(t *testing.T) {
	for _, p := range []string{"", "a/b", "\xff\x00\n\"quoted\"", "日本"} {
		m := meta{Path: p, ID: "v-1_x", Size: 12345, Sum: sumHex([]byte(p))}
		got, err := decodeMeta(m.encode())
		if err != nil || got != m {
			t.Errorf("round trip %q: %+v, %v", p, got, err)
		}
	}
	for _, bad := range []string{"", "mure-blob 1\n", "mure-blob 2\npath \"a\"\nid x\nsize 1\nsha256 " + sumHex(nil) + "\n",
		"mure-blob 1\npath \"a\"\nid x\nsize -1\nsha256 " + sumHex(nil) + "\n",
		"mure-blob 1\npath a\nid x\nsize 1\nsha256 " + sumHex(nil) + "\n"} {
		if _, err := decodeMeta([]byte(bad)); err == nil {
			t.Errorf("decodeMeta(%q) succeeded", bad)
		}
	}
}
