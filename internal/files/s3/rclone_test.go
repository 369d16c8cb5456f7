package s3_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
)

// needProgram skips the test when a client program is missing;
// scripts/test.sh installs it (how says from where).
func needProgram(t *testing.T, name, how string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed (%v): scripts/test.sh installs it %s", name, err, how)
	}
}

// environWithout is this process's environment less the variables
// starting with prefix (an AWS_CA_BUNDLE of the machine's breaks rclone's
// AWS SDK: "unable to load custom CA bundle").
func environWithout(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return env
}

// rcloneEnv configures the remote "mure" on endpoint through the
// environment, with no configuration file of the user's.
func rcloneEnv(t *testing.T, key client.AccessKey, endpoint string) []string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "rclone.conf")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return append(environWithout("AWS_"), "RCLONE_CONFIG="+cfg,
		"RCLONE_CONFIG_MURE_TYPE=s3", "RCLONE_CONFIG_MURE_PROVIDER=Other", "RCLONE_CONFIG_MURE_ENDPOINT="+endpoint,
		"RCLONE_CONFIG_MURE_ACCESS_KEY_ID="+key.ID, "RCLONE_CONFIG_MURE_SECRET_ACCESS_KEY="+key.Secret,
		"RCLONE_CONFIG_MURE_REGION=us-east-1", "RCLONE_CONFIG_MURE_FORCE_PATH_STYLE=true")
}

// oddTree writes a tree of files whose names hold spaces, unicode and
// characters URLs treat specially, an empty file, and one of 6 MiB
// (above the 5 MiB multipart cutoff the tests give the clients).
func oddTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	big := make([]byte, 6<<20+3)
	_, _ = rand.Read(big)
	tree := map[string][]byte{
		"a b c.txt":                    []byte("spaces"),
		"plus+and%percent.txt":         []byte("plus and percent"),
		"é ü ß/🙂 emoji.txt":            []byte("unicode"),
		"q?x=1&y=2#frag.txt":           []byte("query-like"),
		"quotes/'single' \"double\"":   []byte("quotes"),
		"deep/er/and/deeper/file.bin":  []byte("deep"),
		"empty file":                   {},
		"..dots/not a dot segment.txt": []byte("dots"),
		"semi;colon:equals=~tilde!.md": []byte("punctuation"),
		"big/multipart.bin":            big,
	}
	for name, data := range tree {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tree
}

// runAll runs a program and returns its output and errors together.
func runAll(t *testing.T, ctx context.Context, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// rclone syncs a tree with odd names to a bucket and checks it (sizes
// and MD5s: single-part ETags are MD5s, and rclone keeps the MD5 of a
// multipart upload in its metadata), then syncs a change and copies the
// tree back.
func TestS3Rclone(t *testing.T) {
	needProgram(t, "rclone", "from Debian (apt-get install rclone)")
	c, key := s3Cluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := rcloneEnv(t, key, "http://"+c.Nodes[0].S3Addr())
	flags := []string{"--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M", "--transfers", "2", "--checkers", "2", "--retries", "1", "--low-level-retries", "3"}
	rc := func(args ...string) string {
		t.Helper()
		return runAll(t, ctx, env, "rclone", append(args, flags...)...)
	}
	check := func(src string, files int) {
		t.Helper()
		out := rc("check", src, "mure:photos/tree")
		if !strings.Contains(out, "0 differences found") || !strings.Contains(out, fmt.Sprintf("%d matching files", files)) || strings.Contains(out, "could not be checked") {
			t.Fatalf("rclone check:\n%s", out)
		}
	}
	src := t.TempDir()
	tree := oddTree(t, src)
	rc("mkdir", "mure:photos")
	rc("sync", src, "mure:photos/tree")
	check(src, len(tree))
	if ls := rc("lsf", "-R", "--files-only", "mure:photos/tree"); strings.Count(ls, "\n") != len(tree) {
		t.Fatalf("rclone lsf lists %d files, want %d:\n%s", strings.Count(ls, "\n"), len(tree), ls)
	}
	// The MD5 rclone reads for a single-part object is the store's ETag.
	if sums, want := rc("md5sum", "mure:photos/tree/a b c.txt"), fmt.Sprintf("%x  a b c.txt", md5.Sum(tree["a b c.txt"])); strings.TrimSpace(sums) != want {
		t.Fatalf("rclone md5sum: %q, want %q", sums, want)
	}

	// A change, a removal and an addition, synced and checked again.
	if err := os.WriteFile(filepath.Join(src, "a b c.txt"), []byte("changed content"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(src, "empty file")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "new [file].txt"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	rc("sync", src, "mure:photos/tree")
	check(src, len(tree))

	back := t.TempDir()
	rc("copy", "mure:photos/tree", back)
	for name := range tree {
		want, _ := os.ReadFile(filepath.Join(src, name))
		got, err := os.ReadFile(filepath.Join(back, name))
		if name == "empty file" {
			if err == nil {
				t.Errorf("%q was removed by the second sync but came back", name)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%q copied back: %d bytes (%v), want %d", name, len(got), err, len(want))
		}
	}
	rc("purge", "mure:photos/tree")
	if ls := rc("lsf", "-R", "mure:photos"); strings.TrimSpace(ls) != "" {
		t.Fatalf("after purge: %q", ls)
	}
}
