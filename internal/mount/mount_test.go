package mount_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/mount"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// mountOf mounts the cluster reached through addrs on a fresh directory,
// unmounted (lazily, if busy) when the test ends.
func mountOf(t *testing.T, token string, addrs ...string) string {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse on this machine")
	}
	if os.Getuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			t.Skip("not root and no fusermount3 (Debian's fuse3; scripts/test.sh installs it)")
		}
	}
	dir := t.TempDir()
	cl := client.New(addrs, client.WithToken(token), client.WithForwarding())
	m, err := mount.New(dir, mount.Config{Files: cl, Spool: t.TempDir(), OpTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(10 * time.Second); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return dir
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The behaviours programs rely on, on a real node through a real mount.
func TestMountFiles(t *testing.T) {
	c := testcluster.Start(t, 1)
	dir := mountOf(t, c.Token(), c.HTTPAddr(0))
	cl := c.Client(0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	at := func(p string) string { return filepath.Join(dir, p) }

	t.Run("write read append truncate", func(t *testing.T) {
		if err := os.WriteFile(at("a.txt"), []byte("hello"), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(at("a.txt"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(" world"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, at("a.txt")); string(got) != "hello world" {
			t.Fatalf("after append: %q", got)
		}
		if err := os.Truncate(at("a.txt"), 5); err != nil {
			t.Fatal(err)
		}
		rd, err := cl.Get(ctx, "a.txt", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rd)
		rd.Close()
		if string(got) != "hello" {
			t.Fatalf("the cluster holds %q after truncate", got)
		}
		f, err = os.OpenFile(at("a.txt"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("J"), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(3); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, at("a.txt")); string(got) != "Jel" {
			t.Fatalf("after write at 0 and ftruncate: %q", got)
		}
	})

	t.Run("folders rename remove", func(t *testing.T) {
		if err := os.MkdirAll(at("d/e"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(at("d/e/f"), []byte("f"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(at("d/e/f"), at("d/g")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(at("d"), at("d2")); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, at("d2/g")); string(got) != "f" {
			t.Fatalf("after renames: %q", got)
		}
		if err := os.Remove(at("d2")); !errors.Is(err, syscall.ENOTEMPTY) {
			t.Fatalf("rmdir of a full folder: %v, want ENOTEMPTY", err)
		}
		if _, err := os.OpenFile(at("d2/g"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); !errors.Is(err, os.ErrExist) {
			t.Fatalf("O_EXCL over a file: %v", err)
		}
		if err := os.RemoveAll(at("d2")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(at("d2")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("after rm -r: %v", err)
		}
		if _, err := cl.Stat(ctx, "d2/g"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("the cluster still has d2/g: %v", err)
		}
	})

	t.Run("unlinked while open", func(t *testing.T) {
		f, err := os.OpenFile(at("gone"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(at("gone")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("still here"); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 10)
		if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "still here" {
			t.Fatalf("read of an unlinked open file: %q, %v", buf, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Stat(ctx, "gone"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("an unlinked file came back at close: %v", err)
		}
	})

	t.Run("names too long", func(t *testing.T) {
		if err := os.WriteFile(at(strings.Repeat("n", 256)), nil, 0o644); !errors.Is(err, syscall.ENAMETOOLONG) {
			t.Fatalf("a 256-byte name: %v, want ENAMETOOLONG", err)
		}
		deep := at(strings.Repeat("d", 200))
		for range 5 { // 5 folders: a 1004-byte key; a file in it: 1205
			if err := os.Mkdir(deep, 0o755); err != nil {
				t.Fatal(err)
			}
			deep = filepath.Join(deep, strings.Repeat("d", 200))
		}
		if err := os.WriteFile(deep, nil, 0o644); !errors.Is(err, syscall.ENAMETOOLONG) {
			t.Fatalf("a key over 1024 bytes: %v, want ENAMETOOLONG", err)
		}
	})

	t.Run("not a tree: the folder wins", func(t *testing.T) {
		for _, p := range []string{"t/a", "t/a/b"} {
			if _, err := cl.Put(ctx, p, strings.NewReader(p), nil); err != nil {
				t.Fatal(err)
			}
		}
		fi, err := os.Stat(at("t/a"))
		if err != nil || !fi.IsDir() {
			t.Fatalf("t/a: %v, %v; want a folder", fi, err)
		}
		if got := mustRead(t, at("t/a/b")); string(got) != "t/a/b" {
			t.Fatalf("t/a/b: %q", got)
		}
	})

	t.Run("large file streamed", func(t *testing.T) {
		src := randomBytes(t, 24<<20)
		f, err := os.Create(at("big"))
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(src); off += 1 << 20 {
			if _, err := f.Write(src[off : off+1<<20]); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		info, err := cl.Stat(ctx, "big")
		if err != nil || info.Size != int64(len(src)) {
			t.Fatalf("the cluster's big: %+v, %v", info, err)
		}
		if got := mustRead(t, at("big")); !bytes.Equal(got, src) {
			t.Fatalf("read back %d bytes, not the %d written", len(got), len(src))
		}
		// mmap reads through the page cache.
		mf, err := os.Open(at("big"))
		if err != nil {
			t.Fatal(err)
		}
		defer mf.Close()
		mm, err := syscall.Mmap(int(mf.Fd()), 0, len(src), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Munmap(mm)
		if !bytes.Equal(mm[len(src)-4096:], src[len(src)-4096:]) {
			t.Fatal("mmap read differs")
		}
	})

	t.Run("concurrent writers", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Go(func() {
				p := at(fmt.Sprintf("w%d", i))
				if err := os.WriteFile(p, bytes.Repeat([]byte{byte('a' + i)}, 100000), 0o644); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for i := range 8 {
			if got := mustRead(t, at(fmt.Sprintf("w%d", i))); len(got) != 100000 || got[99999] != byte('a'+i) {
				t.Fatalf("w%d: %d bytes", i, len(got))
			}
		}
	})

	t.Run("cp tar git", func(t *testing.T) {
		src := t.TempDir()
		for _, p := range []string{"x/y/z", "x/w", "top"} {
			if err := os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(src, p), []byte(p), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run := func(name string, args ...string) {
			t.Helper()
			if _, err := exec.LookPath(name); err != nil {
				t.Logf("%s is not installed: skipped", name)
				return
			}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(cctx, name, args...)
			cmd.Env = withoutGitEnv(os.Environ())
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s %v: %v\n%s", name, args, err, out)
			}
		}
		run("cp", "-a", src, at("cp"))
		run("sh", "-c", "tar -C "+src+" -cf - . | tar -C "+at("cp")+" -xf -")
		run("rsync", "-a", src+"/", at("rsync")+"/")
		if got := mustRead(t, at("cp/x/y/z")); string(got) != "x/y/z" {
			t.Fatalf("cp -a: %q", got)
		}
		repo := t.TempDir()
		run("git", "-C", repo, "init", "-q")
		run("git", "-C", repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "one")
		run("git", "clone", "-q", repo, at("clone"))
		run("git", "-C", at("clone"), "status", "--short")
	})
}

// Two mounts on two nodes see each other's closed writes, and a mount
// that read a file before does not serve its old pages after another
// node rewrote it. A file put over S3 is read through a mount, and one
// written through a mount is read over S3.
func TestMountTwoNodes(t *testing.T) {
	c := testcluster.Start(t, 2, testcluster.Options{Setup: func(_ int, cfg *node.Config) { cfg.S3Addr = testcluster.FreeAddr(t) }})
	a := mountOf(t, c.Token(), c.HTTPAddr(0))
	b := mountOf(t, c.Token(), c.HTTPAddr(1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	key, err := c.Client(0).CreateAccessKey(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	s3c := s3.New(s3.Options{BaseEndpoint: aws.String("http://" + c.Nodes[0].S3Addr()), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key.ID, key.Secret, "")})
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("photos")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String("from s3.txt"), Body: strings.NewReader("put over s3")}); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, filepath.Join(b, "photos", "from s3.txt")); string(got) != "put over s3" {
		t.Fatalf("the mount reads %q of an S3 object", got)
	}
	// An S3 "folder" (a key ending in '/') is an empty folder here.
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("photos"), Key: aws.String("album/"), Body: strings.NewReader("")}); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(b, "photos", "album"))
	if err != nil || len(ents) != 0 {
		t.Fatalf("an S3 folder reads as %v, %v; want an empty folder", ents, err)
	}
	if err := os.Remove(filepath.Join(b, "photos", "album")); err != nil {
		t.Fatalf("rmdir of an S3 folder: %v", err)
	}
	if err := os.WriteFile(filepath.Join(b, "photos", "from mount.txt"), []byte("written on a mount"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("photos"), Key: aws.String("from mount.txt")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(got) != "written on a mount" {
		t.Fatalf("S3 reads %q of a file written on a mount", got)
	}
	if err := os.WriteFile(filepath.Join(a, "shared.txt"), []byte("one from a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, filepath.Join(b, "shared.txt")); string(got) != "one from a" {
		t.Fatalf("b reads %q", got)
	}
	mustRead(t, filepath.Join(a, "shared.txt")) // a's pages hold version one
	if err := os.WriteFile(filepath.Join(b, "shared.txt"), []byte("two, longer, from b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, filepath.Join(a, "shared.txt")); string(got) != "two, longer, from b" {
		t.Fatalf("a reads %q after b's write", got)
	}
	if err := os.Mkdir(filepath.Join(b, "made-on-b"), 0o755); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 5*time.Second, "a sees b's folder", func() bool {
		fi, err := os.Stat(filepath.Join(a, "made-on-b"))
		return err == nil && fi.IsDir()
	})
}

// kill -9 of the mount's node while a file is being closed (uploaded):
// the close succeeds through another node or fails with EIO, within a
// bound, and the cluster never holds a short file. A mount with no other
// node answers EIO, never hangs.
func TestMountNodeKilled(t *testing.T) {
	c := testcluster.StartProc(t, 3)
	failover := mountOf(t, c.Token(), c.HTTPAddr(0), c.HTTPAddr(1), c.HTTPAddr(2))
	pinned := mountOf(t, c.Token(), c.HTTPAddr(0))
	if err := os.WriteFile(filepath.Join(pinned, "before"), []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := randomBytes(t, 32<<20)
	f, err := os.Create(filepath.Join(failover, "copy"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(src); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- f.Close() }()
	time.Sleep(20 * time.Millisecond) // fault timing, not synchronisation: any outcome below must hold
	c.Kill(0)
	select {
	case err = <-closed:
	case <-time.After(60 * time.Second):
		t.Fatal("close on a mount whose node was killed hangs")
	}
	if err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatalf("close: %v, want success (failover) or EIO", err)
	}
	t.Logf("close after the kill: %v", err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rd, gerr := c.Client(1).Get(ctx, "copy", nil)
	switch {
	case gerr == nil:
		got, rerr := io.ReadAll(rd)
		rd.Close()
		if rerr != nil || !bytes.Equal(got, src) {
			t.Fatalf("the cluster holds %d bytes of copy (%v), not the %d written", len(got), rerr, len(src))
		}
	case err == nil:
		t.Fatalf("close succeeded but the cluster has no copy: %v", gerr)
	case !errors.Is(gerr, client.ErrNotFound):
		t.Fatalf("read copy from node 1: %v", gerr)
	}

	start := time.Now()
	_, err = os.ReadFile(filepath.Join(pinned, "before"))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("read through a mount whose only node is dead: %v, want EIO", err)
	}
	t.Logf("EIO after %s", time.Since(start))
	if d := time.Since(start); d > 40*time.Second {
		t.Fatalf("EIO took %s", d)
	}
}

// withoutGitEnv drops the GIT_* variables a test inherits: run under `git
// bisect run` or a hook, GIT_DIR points at the project's own repository, and
// the test's git commands would write their commits and config there.
func withoutGitEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GIT_") {
			out = append(out, kv)
		}
	}
	return out
}
