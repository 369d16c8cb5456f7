package webdav_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rclone's webdav backend against a real node, as a user with a
// password: copy a tree up, check it, move a file, download, purge.
func TestRcloneWebDAV(t *testing.T) {
	bin, err := exec.LookPath("rclone")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("rclone is not installed (scripts/test.sh installs it)")
		}
		t.Skip("rclone is not installed: apt-get install rclone (scripts/test.sh does)")
	}
	c, _ := davCluster(t, 1)
	alice := davOf(t, c, 0, "alice", alicePassword)
	alice.want(http.StatusCreated, "MKCOL", "/photos/", "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	obscured, err := exec.CommandContext(ctx, bin, "obscure", alicePassword).Output()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "RCLONE_CONFIG_MURE_TYPE=webdav", "RCLONE_CONFIG_MURE_URL="+alice.base+"/",
		"RCLONE_CONFIG_MURE_VENDOR=other", "RCLONE_CONFIG_MURE_USER=alice",
		"RCLONE_CONFIG_MURE_PASS="+strings.TrimSpace(string(obscured)), "RCLONE_CONFIG="+filepath.Join(t.TempDir(), "none.conf"))
	rclone := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("rclone %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	src := t.TempDir()
	for _, p := range []string{"a.txt", "sub/b.txt", "sub/deeper/c.bin"} {
		if err := os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, p), []byte(strings.Repeat(p, 1000)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rclone("copy", src, "mure:photos/tree")
	rclone("check", src, "mure:photos/tree")
	rclone("moveto", "mure:photos/tree/a.txt", "mure:photos/tree/sub/moved.txt")
	if got := rclone("lsf", "-R", "mure:photos/tree"); !strings.Contains(got, "sub/moved.txt") || strings.Contains(got, "\na.txt") || strings.HasPrefix(got, "a.txt") {
		t.Fatalf("after moveto, lsf -R lists:\n%s", got)
	}
	dst := t.TempDir()
	rclone("copy", "mure:photos/tree", dst)
	b, err := os.ReadFile(filepath.Join(dst, "sub", "deeper", "c.bin"))
	if err != nil || string(b) != strings.Repeat("sub/deeper/c.bin", 1000) {
		t.Fatalf("downloaded c.bin: %d bytes, %v", len(b), err)
	}
	rclone("purge", "mure:photos/tree")
	alice.want(http.StatusNotFound, "PROPFIND", "/photos/tree/", "", "Depth", "0")
}
