package s3_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mure-dev/mure/internal/testcluster"
)

// lockedBuffer is a buffer a running program writes while the test reads
// it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// mounted reports whether dir is a mount point (in /proc/mounts).
func mounted(dir string) bool {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[1] == dir {
			return true
		}
	}
	return false
}

// s3fs-fuse mounts a bucket: files and folders made through the mount
// are objects (folders as keys ending in '/'), objects put over S3 are
// files, and renames, mode changes (a copy onto itself with REPLACE) and
// removals go through.
func TestS3fs(t *testing.T) {
	needProgram(t, "s3fs", "from Debian (apt-get install s3fs)")
	if _, err := os.Stat("/dev/fuse"); err != nil || os.Geteuid() != 0 {
		t.Skipf("mounting with FUSE needs /dev/fuse (%v) and root (euid %d)", err, os.Geteuid())
	}
	c, key := s3Cluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := s3Client(c, 0, key)
	b := aws.String("photos")
	if _, err := s.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mnt, passwd := filepath.Join(dir, "mnt"), filepath.Join(dir, "passwd")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(passwd, []byte(key.ID+":"+key.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	cmd := exec.Command("s3fs", "photos", mnt, "-f", "-o", "url=http://"+c.Nodes[0].S3Addr()+",use_path_request_style,passwd_file="+passwd+
		",endpoint=us-east-1,stat_cache_expire=1,retries=2,connect_timeout=10,readwrite_timeout=30,dbglevel=warn")
	cmd.Env = environWithout("AWS_")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		if mounted(mnt) {
			_ = exec.Command("fusermount", "-u", mnt).Run()
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	testcluster.WaitFor(t, 20*time.Second, "s3fs mounted the bucket", func() bool {
		select {
		case <-exited:
			if l := logs.String(); strings.Contains(l, "fuse: device not found") || strings.Contains(l, "Operation not permitted") {
				t.Skipf("s3fs could not mount (%v): FUSE is not usable here\n%s", exitErr, l)
			}
			t.Fatalf("s3fs exited before mounting: %v\n%s", exitErr, logs.String())
		default:
		}
		return mounted(mnt)
	})

	// A file and a folder made through the mount are objects.
	if err := os.WriteFile(filepath.Join(mnt, "hello.txt"), []byte("through the mount"), 0o644); err != nil {
		t.Fatalf("write through the mount: %v\n%s", err, logs.String())
	}
	if err := os.MkdirAll(filepath.Join(mnt, "album", "2026"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "album", "2026", "a b.jpg"), []byte("jpeg"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := s.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("hello.txt")})
	if got := readAll(t, out, err); got != "through the mount" {
		t.Fatalf("object of a file written through the mount: %q", got)
	}
	if _, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("album/2026/")}); err != nil {
		t.Fatalf("the folder made by mkdir is not the object album/2026/: %v", err)
	}
	// An object put over S3 is a file of the mount.
	if _, err := s.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("album/from s3.txt"), Body: strings.NewReader("over S3")}); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the object put over S3 shows in the mount", func() bool {
		got, err := os.ReadFile(filepath.Join(mnt, "album", "from s3.txt"))
		return err == nil && string(got) == "over S3"
	})
	names := func(d string) []string {
		es, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	if got := names(filepath.Join(mnt, "album")); !slices.Equal(got, []string{"2026", "from s3.txt"}) {
		t.Fatalf("ls album: %q", got)
	}
	// A mode change and a rename: copies with REPLACE, then a delete.
	if err := os.Chmod(filepath.Join(mnt, "hello.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(mnt, "hello.txt"), filepath.Join(mnt, "album", "renamed.txt")); err != nil {
		t.Fatalf("rename: %v\n%s", err, logs.String())
	}
	st, err := os.Stat(filepath.Join(mnt, "album", "renamed.txt"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("renamed file: %v mode %v", err, st)
	}
	if _, err := s.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("hello.txt")}); code(err) != "NotFound" {
		t.Fatalf("the rename's source is still an object: %v", err)
	}
	// Removals.
	if err := os.RemoveAll(filepath.Join(mnt, "album")); err != nil {
		t.Fatalf("rm -r through the mount: %v\n%s", err, logs.String())
	}
	l, err := s.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b})
	if err != nil || len(l.Contents) != 0 {
		t.Fatalf("after rm -r: %v %d objects", err, len(l.Contents))
	}
}
