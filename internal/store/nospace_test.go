package store

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// mountTinyFS mounts a 1 MiB tmpfs and returns its path, or skips the test.
func mountTinyFS(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("ENOSPC test needs root to mount a 1 MiB tmpfs; skipping")
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("ENOSPC test: cannot mount tmpfs (%v: %s); skipping", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

func TestNoSpace(t *testing.T) {
	mnt := mountTinyFS(t)
	dir := filepath.Join(mnt, "store")
	s := openStore(t, dir, Options{}) // registered after umount: closed first

	early := content(200<<10, 1)
	put(t, s, "keep/me", "v1", early)

	// 1. The disk fills up while writing the content.
	w, err := s.Create("big", "v1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(w, bytes.NewReader(content(2<<20, 2)))
	if err == nil {
		_, err = w.Commit()
	}
	w.Abort()
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("writing 2 MiB to a 1 MiB fs: err = %v, want ErrNoSpace", err)
	}
	t.Logf("write error: %v", err)
	checkAfterNoSpace(t, s, dir, early)

	// 2. The disk is full when the sidecar is written at Commit.
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	w, err = s.Create("small", "v1") // before filling: needs no data block
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(filler, bytes.NewReader(make([]byte, 2<<20))); err == nil {
		t.Fatal("filling the fs did not fail")
	}
	filler.Close()
	_, err = w.Commit()
	w.Abort()
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Commit on a full fs: err = %v, want ErrNoSpace", err)
	}
	t.Logf("commit error: %v", err)
	checkAfterNoSpace(t, s, dir, early)

	// 3. Space freed: writes work again.
	os.Remove(filepath.Join(mnt, "filler"))
	put(t, s, "after", "v1", []byte("ok"))
	if got := readAll(t, s, "after", "v1"); string(got) != "ok" {
		t.Errorf("after freeing space got %q", got)
	}
}

func checkAfterNoSpace(t *testing.T, s *Store, dir string, early []byte) {
	t.Helper()
	if files := filesUnder(t, filepath.Join(dir, "tmp")); len(files) != 0 {
		t.Errorf("temp files left after ENOSPC: %v", files)
	}
	if got := readAll(t, s, "keep/me", "v1"); !bytes.Equal(got, early) {
		t.Error("earlier blob damaged")
	}
	if err := s.Verify("keep/me", "v1"); err != nil {
		t.Errorf("Verify earlier blob: %v", err)
	}
	if n, b := s.Usage(); n != 1 || b != int64(len(early)) {
		t.Errorf("Usage = %d, %d", n, b)
	}
}
