package systest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/store/crashfs"
	"github.com/mure-dev/mure/internal/testcluster"
)

// Power loss at the disk seam: each node's blob store and raft log run
// on crashfs disks, which keep only what was fsynced. kill -9 would leave
// the page cache intact and could not catch a missing fsync; this can.
// (Raft's snapshots, written rarely by hashicorp/raft's own file store,
// are outside the seam.)

// crashDisks gives each node of a cluster crashfs disks for its store
// and its raft log.
type crashDisks struct {
	t   *testing.T
	mu  sync.Mutex
	fs  map[int]*crashfs.FS // the blob store's
	log map[int]*crashfs.FS // raft's log's
}

func newCrashDisks(t *testing.T) *crashDisks {
	return &crashDisks{t: t, fs: map[int]*crashfs.FS{}, log: map[int]*crashfs.FS{}}
}

// setup is the cluster option: fsync on, the store and the raft log on
// crashfs disks.
func (d *crashDisks) setup(i int, cfg *node.Config) {
	fsys, err := crashfs.New(filepath.Join(cfg.DataDir, "store"))
	if err != nil {
		d.t.Fatal(err)
	}
	logfs, err := crashfs.New(filepath.Join(cfg.DataDir, "raft", "log"))
	if err != nil {
		d.t.Fatal(err)
	}
	d.mu.Lock()
	d.fs[i], d.log[i] = fsys, logfs
	d.mu.Unlock()
	cfg.NoSync = false
	cfg.StoreFS, cfg.LogFS = fsys, logfs
}

// crash cuts the power of the nodes' blob stores: from now on they fail
// every operation, and the disks hold only what was made durable.
func (d *crashDisks) crash(nodes ...int) {
	d.t.Helper()
	for _, i := range nodes {
		d.mu.Lock()
		back, err := d.fs[i].Crash()
		d.fs[i] = back
		d.mu.Unlock()
		if err != nil {
			d.t.Fatal(err)
		}
	}
}

// restart stops the crashed nodes, cuts the power of their raft logs
// too, and starts them on their disks as they came back. The log loses
// power only once raft has stopped: hashicorp/raft panics when it cannot
// save its term, which in a test process would take the test down with
// it. That changes nothing for what the test can catch: whatever the log
// acknowledged but had not synced is dropped here as it would have been
// at the blob store's crash; only writes still in flight get to finish.
func (d *crashDisks) restart(c *testcluster.Cluster, nodes ...int) {
	d.t.Helper()
	for _, i := range nodes {
		c.Kill(i)
	}
	for _, i := range nodes {
		d.mu.Lock()
		back, err := d.log[i].Crash()
		d.log[i] = back
		d.mu.Unlock()
		if err != nil {
			d.t.Fatal(err)
		}
	}
	for _, i := range nodes {
		c.RestartWith(i, func(cfg *node.Config) { cfg.StoreFS, cfg.LogFS = d.fs[i], d.log[i] })
	}
	for _, i := range nodes {
		c.WaitReady(i)
	}
}

// acked records, per path, what a read may return after the crash: the
// last acknowledged write, or a write attempted after it whose outcome is
// unknown (or nothing, before the first acknowledged one).
type acked struct {
	mu      sync.Mutex
	allowed map[string][]content
	n       int
}

type content struct {
	absent bool
	data   []byte
}

func (a *acked) record(path string, data []byte, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ok {
		a.allowed[path] = []content{{data: data}}
		a.n++
		return
	}
	if _, known := a.allowed[path]; !known {
		a.allowed[path] = []content{{absent: true}}
	}
	a.allowed[path] = append(a.allowed[path], content{data: data})
}

func (a *acked) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// writeUntilCrash has three writers overwrite their files through the
// given nodes until at least minAcked writes are acknowledged, then cuts
// the power of the nodes' disks while they still write.
func writeUntilCrash(t *testing.T, c *testcluster.Cluster, d *crashDisks, via []int, crash []int, minAcked int) *acked {
	t.Helper()
	a := &acked{allowed: map[string][]content{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		cl := client.New([]string{c.HTTPAddr(via[w%len(via)])}, client.WithToken(c.Token()), client.WithAttempts(1))
		rng := rand.New(rand.NewPCG(uint64(w), 1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				path := fmt.Sprintf("w%d/f%d", w, i%5)
				data := make([]byte, rng.IntN(200<<10))
				for j := range data {
					data[j] = byte(rng.Uint32())
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := cl.Put(ctx, path, bytes.NewReader(data), nil)
				cancel()
				a.record(path, data, err == nil)
			}
		}()
	}
	testcluster.WaitFor(t, 30*time.Second, fmt.Sprintf("%d acknowledged writes", minAcked), func() bool { return a.count() >= minAcked })
	d.crash(crash...) // the writers are still at work
	close(stop)
	wg.Wait()
	t.Logf("%d writes acknowledged before the power loss", a.count())
	d.restart(c, crash...)
	return a
}

// checkReadBack reads every path written through node i and compares it
// with what the crash may have left.
func checkReadBack(t *testing.T, c *testcluster.Cluster, i int, a *acked) {
	t.Helper()
	cl := client.New([]string{c.HTTPAddr(i)}, client.WithToken(c.Token()), client.WithAttempts(1))
	// Unavailable answers are retried for 10 s in all (the node may still
	// be catching up); after that, each path gets one try.
	deadline := time.Now().Add(10 * time.Second)
	for path, allowed := range a.allowed {
		got, err := get(t, cl, path)
		for errors.Is(err, client.ErrUnavailable) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			got, err = get(t, cl, path)
		}
		absent := errors.Is(err, client.ErrNotFound)
		if err != nil && !absent {
			t.Errorf("node %d: read %s: %v", i, path, err)
			continue
		}
		ok := false
		for _, want := range allowed {
			ok = ok || want.absent && absent || !want.absent && !absent && got == string(want.data)
		}
		if !ok {
			t.Errorf("node %d: %s after the power loss: found %v, %d bytes; none of the %d allowed states (first: absent %v, %d bytes)",
				i, path, !absent, len(got), len(allowed), allowed[0].absent, len(allowed[0].data))
		}
	}
}

func TestPowerLossSingleNode(t *testing.T) {
	d := newCrashDisks(t)
	c := testcluster.Start(t, 1, testcluster.Options{Setup: d.setup})
	a := writeUntilCrash(t, c, d, []int{0}, []int{0}, 30)
	checkReadBack(t, c, 0, a)
}

// TestPowerLossCluster: with durability=local (the writer's disk alone
// holds a write when it is acknowledged), every node's disk loses power
// at once; after the restart every acknowledged write reads back, through
// every node.
func TestPowerLossCluster(t *testing.T) {
	d := newCrashDisks(t)
	c := testcluster.Start(t, 3, testcluster.Options{Setup: d.setup})
	for k, v := range map[string]string{"durability": "local", "resume": "immediate"} {
		if _, err := c.Client(0).SetConfig(ctxT(t), k, v); err != nil {
			t.Fatal(err)
		}
	}
	a := writeUntilCrash(t, c, d, []int{0, 1, 2}, []int{0, 1, 2}, 40)
	for i := range 3 {
		checkReadBack(t, c, i, a)
	}
}

// TestRestartKeepsNewestBlobs: a node that restarts replays its raft log;
// until it has, its view of a file may be an older version. Garbage
// collection must not judge on that view: with durability=local the
// newest blob may be the only copy. (Found by TestPowerLossSingleNode:
// the replication worker collected blobs of versions not replayed yet.)
func TestRestartKeepsNewestBlobs(t *testing.T) {
	c := testcluster.Start(t, 1)
	cl := c.Client()
	for v := range 20 {
		for f := range 10 {
			put(t, cl, fmt.Sprintf("f%d", f), fmt.Sprintf("v%d", v))
		}
	}
	c.Restart(0)
	c.WaitReady(0)
	for f := range 10 {
		mustGet(t, c.Client(), fmt.Sprintf("f%d", f), "v19")
	}
}
