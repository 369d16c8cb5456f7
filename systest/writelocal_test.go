package systest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/mount"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// writer writes body as path through one access path of node i.
type writer func(t *testing.T, i int, path, body string)

// TestWriteLocal writes through every access path — native HTTP, S3
// (aws-sdk-go-v2), WebDAV (rclone) and the FUSE mount — of each node of a
// three-node cluster with one copy per file and durability local: the
// node that received the write holds its right and the only copy. A
// second write of the same path through another node leaves both where
// they are (the right is held by a live node: the write goes to it).
func TestWriteLocal(t *testing.T) {
	c := testcluster.Start(t, 3, testcluster.Options{Setup: func(_ int, cfg *node.Config) {
		cfg.S3Addr = testcluster.FreeAddr(t)
		cfg.WebDAVAddr = testcluster.FreeAddr(t)
	}})
	ctx := ctxT(t)
	// resume.idle keeps each right with its writer for the test's length.
	for _, kv := range [][2]string{{meta.CfgReplication, "1"}, {meta.CfgDurability, "local"}, {meta.CfgResumeIdle, "10m"}} {
		if _, err := c.Client(0).SetConfig(ctx, kv[0], kv[1]); err != nil {
			t.Fatalf("config %s=%s: %v", kv[0], kv[1], err)
		}
	}
	paths := map[string]writer{
		"native": func(t *testing.T, i int, path, body string) {
			if _, err := c.Client(i).Put(ctxT(t), path, strings.NewReader(body), nil); err != nil {
				t.Fatalf("put %s through node %d: %v", path, i, err)
			}
		},
		"s3":     s3Writer(t, c),
		"webdav": webdavWriter(t, c),
		"mount":  mountWriter(t, c),
	}
	for _, name := range slices.Sorted(maps.Keys(paths)) {
		write := paths[name]
		t.Run(name, func(t *testing.T) {
			for i := range c.Nodes {
				path := fmt.Sprintf("local-%s/%d.txt", name, i)
				write(t, i, path, "first through "+name)
				wantRightAndCopy(t, c, path, c.ID(i), "first through "+name)
				other := (i + 1) % len(c.Nodes)
				write(t, other, path, "second, through node "+fmt.Sprint(other))
				wantRightAndCopy(t, c, path, c.ID(i), "second, through node "+fmt.Sprint(other))
			}
		})
	}
}

// wantRightAndCopy waits until every node sees path with content body,
// its write right at id and its only valid copy there.
func wantRightAndCopy(t *testing.T, c *testcluster.Cluster, path, id, body string) {
	t.Helper()
	var last *meta.File
	testcluster.WaitFor(t, 10*time.Second, path+": right and only copy at "+id, func() bool {
		for _, nd := range c.Nodes {
			f := nd.Cluster().FSM().File(path)
			last = f
			if f == nil || !f.Exists() || f.Size != int64(len(body)) || f.Holder != id || !slices.Equal(f.Valid, []string{id}) {
				return false
			}
		}
		return true
	})
	if t.Failed() && last != nil {
		t.Logf("last seen: holder %q valid %v", last.Holder, last.Valid)
	}
	mustGet(t, c.Client(0), path, body)
}

// s3Writer writes with aws-sdk-go-v2 to node i's S3 address, as admin.
func s3Writer(t *testing.T, c *testcluster.Cluster) writer {
	key, err := c.Client(0).CreateAccessKey(ctxT(t), "admin")
	if err != nil {
		t.Fatal(err)
	}
	made := false
	return func(t *testing.T, i int, path, body string) {
		s := s3.New(s3.Options{BaseEndpoint: aws.String("http://" + c.Nodes[i].S3Addr()), Region: "us-east-1", UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(key.ID, key.Secret, "")})
		bucket, k, _ := strings.Cut(path, "/")
		if !made {
			if _, err := s.CreateBucket(ctxT(t), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
				t.Fatal(err)
			}
			made = true
		}
		if _, err := s.PutObject(ctxT(t), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: strings.NewReader(body)}); err != nil {
			t.Fatalf("S3 put %s through node %d: %v", path, i, err)
		}
	}
}

// webdavWriter uploads with rclone's webdav backend to node i's WebDAV
// address, with the admin token.
func webdavWriter(t *testing.T, c *testcluster.Cluster) writer {
	return func(t *testing.T, i int, path, body string) {
		bin, err := exec.LookPath("rclone")
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("rclone is not installed (scripts/test.sh installs it)")
			}
			t.Skip("rclone is not installed: apt-get install rclone (scripts/test.sh does)")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "rcat", "mure:"+path)
		cmd.Env = append(os.Environ(), "RCLONE_CONFIG_MURE_TYPE=webdav", "RCLONE_CONFIG_MURE_URL=http://"+c.Nodes[i].WebDAVAddr()+"/",
			"RCLONE_CONFIG_MURE_VENDOR=other", "RCLONE_CONFIG_MURE_BEARER_TOKEN="+c.Token(),
			"RCLONE_CONFIG="+filepath.Join(t.TempDir(), "none.conf"))
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("rclone rcat %s through node %d: %v\n%s", path, i, err, out)
		}
	}
}

// mountWriter writes a file on a FUSE mount of node i (as `mure mount`
// does: forwarding on, one node), mounted at first use.
func mountWriter(t *testing.T, c *testcluster.Cluster) writer {
	dirs := map[int]string{}
	return func(t *testing.T, i int, path, body string) {
		if _, err := os.Stat("/dev/fuse"); err != nil {
			t.Skip("no /dev/fuse on this machine")
		}
		dir, ok := dirs[i]
		if !ok {
			dir = t.TempDir()
			m, err := mount.New(dir, mount.Config{Files: client.New([]string{c.HTTPAddr(i)}, client.WithToken(c.Token()), client.WithForwarding()),
				Spool: t.TempDir(), OpTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := m.Close(10 * time.Second); err != nil {
					t.Errorf("unmount: %v", err)
				}
			})
			dirs[i] = dir
		}
		p := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatalf("write %s on node %d's mount: %v", path, i, err)
		}
	}
}
