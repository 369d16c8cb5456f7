package systest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// Checksums: a replica corrupted on one node's disk is never served by
// that node, is detected (by the scrub, or when first opened after a
// start), and is repaired from another holder.

// blobFile is where node i keeps the content of path's current version:
// a file and the content's offset in it (0 for a blob in a file of its
// own; a small one is a record in a segment, decision 0037).
func blobFile(t *testing.T, c *testcluster.Cluster, i int, path string) (string, int64) {
	t.Helper()
	f := c.Nodes[i].Cluster().FSM().File(path)
	if !f.Exists() {
		t.Fatalf("%s does not exist", path)
	}
	sum := sha256.Sum256([]byte(path))
	h := hex.EncodeToString(sum[:])
	name := filepath.Join(c.Nodes[i].Dir, "store", "blobs", h[:2], h, f.BlobID)
	if _, err := os.Stat(name); err == nil {
		return name, 0
	}
	// A record's path and id are followed by its content.
	segs, _ := filepath.Glob(filepath.Join(c.Nodes[i].Dir, "store", "segments", "*.seg"))
	for _, seg := range segs {
		b, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		if at := bytes.LastIndex(b, []byte(path+f.BlobID)); at >= 0 {
			return seg, int64(at + len(path) + len(f.BlobID))
		}
	}
	t.Fatalf("no copy of %s (blob %s) on node %d", path, f.BlobID, i)
	return "", 0
}

// flipBytes corrupts a file in place (same size) at the given offsets.
func flipBytes(t *testing.T, name string, offsets ...int64) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, off := range offsets {
		b := []byte{0}
		if _, err := f.ReadAt(b, off); err != nil {
			t.Fatal(err)
		}
		b[0] ^= 0x5a
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// noRedirect is one GET on node addr that does not follow redirects;
// err is set when the body could not be read whole.
func noRedirect(ctx context.Context, addr, path string) (status int, body []byte, err error) {
	hc := &http.Client{Transport: testcluster.Authorize(nil), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/files/"+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// waitServedLocally waits until node i serves path itself with want.
func waitServedLocally(t *testing.T, c *testcluster.Cluster, i int, path string, want []byte) {
	t.Helper()
	testcluster.WaitFor(t, 20*time.Second, path+" repaired and served by node "+string(rune('0'+i)), func() bool {
		status, body, err := noRedirect(ctxT(t), c.HTTPAddr(i), path)
		if status == http.StatusOK && err == nil && !bytes.Equal(body, want) {
			t.Fatalf("node %d served %s with wrong content (%d bytes)", i, path, len(body))
		}
		return status == http.StatusOK && err == nil
	})
}

func TestCorruptReplicaFoundByScrub(t *testing.T) {
	c := testcluster.Start(t, 3, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.ScrubPeriod, cfg.ScrubRate = 200*time.Millisecond, -1
	}})
	if _, err := c.Client(0).SetConfig(ctxT(t), "resume", "immediate"); err != nil {
		t.Fatal(err)
	}
	want := randomBytes(300<<10, 1)
	if _, err := c.Client(0).Put(ctxT(t), "c", bytes.NewReader(want), nil); err != nil {
		t.Fatal(err)
	}
	waitValidEverywhere(t, c, "c")
	name, base := blobFile(t, c, 1, "c")
	flipBytes(t, name, base, base+1000, base+300<<10-1)

	// A replica is not checked on every read (large ones go out by
	// sendfile): until the scrub reaches it, node 1 would serve the
	// damage. Once the scrub has found it, node 1 answers with a redirect,
	// a 503 or, repaired, the right bytes: never the corrupt ones.
	n1 := c.Nodes[1]
	testcluster.WaitFor(t, 10*time.Second, "the scrub to find the damage", func() bool { return n1.Status().Store.Corrupt == 1 })
	statuses := map[int]int{}
	testcluster.WaitFor(t, 20*time.Second, "node 1's copy repaired and served", func() bool {
		status, body, err := noRedirect(ctxT(t), c.HTTPAddr(1), "c")
		statuses[status]++
		if status == http.StatusOK && (err != nil || !bytes.Equal(body, want)) {
			t.Fatalf("node 1 served %d bytes of c, not the content written (read error %v)", len(body), err)
		}
		return status == http.StatusOK
	})
	t.Logf("answers of node 1 after the scrub found the damage: %v", statuses)
	if !n1.Cluster().FSM().File("c").IsValidOn(n1.ID()) {
		t.Error("node 1 serves c but is not among its valid holders")
	}
	if _, err := os.Stat(filepath.Join(n1.Dir, "store", "quarantine", filepath.Base(filepath.Dir(name))+"-"+filepath.Base(name))); err != nil {
		t.Errorf("the damaged copy is not in quarantine: %v", err)
	}
	resp, err := http.Get("http://" + c.HTTPAddr(1) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"mure_store_corrupt_total 1", "mure_files_replicas_lost_total 1", "mure_files_replicas_dropped_total 1", "mure_store_scrub_passes_total"} {
		if !strings.Contains(string(b), m) {
			t.Errorf("/metrics of node 1 lacks %q", m)
		}
	}
}

// TestCorruptReplicaFirstOpen: with the scrub off, a node restarted over
// damaged copies checks each when first opened: a small one before
// answering (the read is redirected), a large one as it is sent (the
// response is cut short). Both are then repaired.
func TestCorruptReplicaFirstOpen(t *testing.T) {
	c := testcluster.Start(t, 3, testcluster.Options{Setup: func(i int, cfg *node.Config) { cfg.ScrubPeriod = -1 }})
	if _, err := c.Client(0).SetConfig(ctxT(t), "resume", "immediate"); err != nil {
		t.Fatal(err)
	}
	small, large := randomBytes(10<<10, 2), randomBytes(3<<20, 3)
	for path, data := range map[string][]byte{"small": small, "large": large} {
		if _, err := c.Client(0).Put(ctxT(t), path, bytes.NewReader(data), nil); err != nil {
			t.Fatal(err)
		}
		waitValidEverywhere(t, c, path)
	}
	// A record after the small one: damage in a segment's last record
	// reads as a torn append, dropped at Open without a report
	// (decision 0037).
	if _, err := c.Client(0).Put(ctxT(t), "after", bytes.NewReader(randomBytes(100, 4)), nil); err != nil {
		t.Fatal(err)
	}
	waitValidEverywhere(t, c, "after")
	smallFile, smallAt := blobFile(t, c, 1, "small")
	largeFile, largeAt := blobFile(t, c, 1, "large")
	c.Kill(1)
	flipBytes(t, smallFile, smallAt+5)
	flipBytes(t, largeFile, largeAt+2<<20)
	c.Restart(1)
	c.WaitReady(1)

	status, body, err := noRedirect(ctxT(t), c.HTTPAddr(1), "small")
	if status != http.StatusTemporaryRedirect {
		t.Fatalf("first GET of the damaged small copy: %d (%d bytes, %v), want 307 to a healthy holder", status, len(body), err)
	}
	status, body, err = noRedirect(ctxT(t), c.HTTPAddr(1), "large")
	if status != http.StatusOK || err == nil || len(body) >= len(large) {
		t.Fatalf("first GET of the damaged large copy: %d, %d of %d bytes, read error %v; want 200 cut short", status, len(body), len(large), err)
	}
	if n := min(len(body), 2<<20); !bytes.Equal(body[:n], large[:n]) {
		t.Errorf("the bytes sent before the damaged offset differ from the content written")
	}
	t.Logf("large: the response was cut after %d of %d bytes: %v", len(body), len(large), err)
	waitServedLocally(t, c, 1, "small", small)
	waitServedLocally(t, c, 1, "large", large)
	if got := c.Nodes[1].Status().Store.Corrupt; got != 2 {
		t.Errorf("node 1 counts %d corrupt replicas, want 2", got)
	}
}
