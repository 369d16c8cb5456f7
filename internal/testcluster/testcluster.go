// Package testcluster starts real mure nodes in the test process, on
// 127.0.0.1 ports, with short failure-detection timings: the shared helper
// of every multi-node test (see systest/). Nodes are real: real raft,
// gossip, TLS peer port, disk store and HTTP servers.
package testcluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/node"
)

// Cluster is a set of in-process nodes.
type Cluster struct {
	t     testing.TB
	root  string
	Nodes []*Node
	key   string
	token string // the admin credential of node 0
}

// Node is one member; Node is nil while stopped.
type Node struct {
	*node.Node
	Index int
	Dir   string
	cfg   node.Config
	id    string // kept while the node is down
}

// Options tune a test cluster.
type Options struct {
	// Setup is applied to each node's config before it starts.
	Setup func(i int, cfg *node.Config)
}

// Start brings up n nodes: node 0 founds the cluster and the others join
// it. It returns when every node is a ready member.
func Start(t testing.TB, n int, opts ...Options) *Cluster {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	// The root directory first: cleanups run last-in first-out, so the
	// nodes stop before their directories are removed.
	c := &Cluster{t: t, root: t.TempDir()}
	t.Cleanup(c.Shutdown)
	for i := 0; i < n; i++ {
		c.add(o.Setup)
	}
	c.WaitMembers(n)
	for i := range c.Nodes {
		c.WaitReady(i)
	}
	return c
}

func (c *Cluster) add(setup func(int, *node.Config)) *Node {
	c.t.Helper()
	i := len(c.Nodes)
	dir := filepath.Join(c.root, fmt.Sprintf("n%d", i))
	cfg := node.Config{
		DataDir: dir, HTTPAddr: freeAddr(c.t), PeerAddr: freeAddr(c.t),
		NoSync: true, Timing: cluster.FastTiming(), Key: c.key, CacheBytes: 1 << 20,
		Logger: testLogger(c.t, i), Auth: node.AuthConfig{HashParams: auth.TestHashParams()},
	}
	if i > 0 {
		cfg.Join = []string{c.Nodes[0].cfg.PeerAddr}
	}
	if setup != nil {
		setup(i, &cfg)
	}
	nd := &Node{Index: i, Dir: dir, cfg: cfg}
	c.Nodes = append(c.Nodes, nd)
	c.startNode(nd)
	if i == 0 {
		b, err := os.ReadFile(nd.KeyPath())
		if err != nil {
			c.t.Fatalf("read cluster key: %v", err)
		}
		c.key = string(b)
		if !cfg.Auth.Open || cfg.Token != "" {
			c.token = readAdminToken(c.t, dir)
		}
	}
	register(c.token, cfg.HTTPAddr, nd.FastAddr()) // the lane's port may be chosen at listen time
	if cfg.Front != nil {
		register(c.token, cfg.Front.Addr)
	}
	return nd
}

// Add starts one more node joining the cluster and waits until it is ready.
func (c *Cluster) Add() *Node {
	c.t.Helper()
	return c.AddWith(Options{})
}

// AddWith is Add with options for the new node.
func (c *Cluster) AddWith(o Options) *Node {
	c.t.Helper()
	nd := c.add(o.Setup)
	c.WaitReady(nd.Index)
	return nd
}

func (c *Cluster) startNode(nd *Node) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Open(ctx, nd.cfg)
	if err != nil {
		c.t.Fatalf("start node %d: %v", nd.Index, err)
	}
	nd.Node = n
	nd.id = n.ID()
}

// ID returns node i's ID (also while it is down).
func (c *Cluster) ID(i int) string { return c.Nodes[i].id }

// Kill takes node i down without leaving the cluster: the others see it
// fail. In process, that is the nearest to a crash: the node is closed
// (ProcCluster.Kill sends SIGKILL).
func (c *Cluster) Kill(i int) { _ = c.Stop(i) }

// Stop stops node i gracefully (node.Close) without leaving the cluster,
// and returns Close's error (ProcCluster.Stop sends SIGTERM).
func (c *Cluster) Stop(i int) error {
	nd := c.Nodes[i]
	if nd.Node == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := nd.Close(ctx)
	nd.Node = nil
	return err
}

// Restart starts a stopped node again with only its data directory (and
// its old addresses, so that the others find it where they remember it).
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	nd := c.Nodes[i]
	c.Kill(i)
	nd.cfg.Join = nil
	nd.cfg.Key = ""
	c.startNode(nd)
}

// RestartWith is Restart with a change to node i's config first (e.g. the
// file system its store comes back on after a simulated power loss).
func (c *Cluster) RestartWith(i int, setup func(cfg *node.Config)) {
	c.t.Helper()
	setup(&c.Nodes[i].cfg)
	c.Restart(i)
}

// Shutdown stops every node.
func (c *Cluster) Shutdown() {
	for i := range c.Nodes {
		if err := c.Stop(i); err != nil {
			c.t.Errorf("stop node %d: %v", i, err)
		}
	}
}

// Running returns the indexes of running nodes.
func (c *Cluster) Running() []int {
	var out []int
	for i, nd := range c.Nodes {
		if nd.Node != nil {
			out = append(out, i)
		}
	}
	return out
}

// Leader waits for a running node to be leader and returns its index.
func (c *Cluster) Leader() int {
	c.t.Helper()
	idx := -1
	WaitFor(c.t, 15*time.Second, "a leader", func() bool {
		for _, i := range c.Running() {
			if c.Nodes[i].Cluster().IsLeader() {
				idx = i
				return true
			}
		}
		return false
	})
	return idx
}

// WaitMembers waits until the leader's catalogue lists n active nodes and
// raft has min(n, 3 or 5) voters.
func (c *Cluster) WaitMembers(n int) {
	c.t.Helper()
	WaitFor(c.t, 30*time.Second, fmt.Sprintf("%d active members", n), func() bool {
		for _, i := range c.Running() {
			nd := c.Nodes[i]
			if !nd.Cluster().IsLeader() {
				continue
			}
			active := 0
			for _, m := range nd.Cluster().Members() {
				if m.State == "active" && m.Suffrage != "none" {
					active++
				}
			}
			return active >= n
		}
		return false
	})
}

// WaitReady waits until node i holds a read lease.
func (c *Cluster) WaitReady(i int) {
	c.t.Helper()
	WaitFor(c.t, 30*time.Second, fmt.Sprintf("node %d ready", i), func() bool {
		nd := c.Nodes[i]
		return nd.Node != nil && nd.Cluster().HasReadLease()
	})
}

// Client returns a client of the given nodes (all running ones when none
// given), with retries off unless attempts > 1 is configured by the caller.
func (c *Cluster) Client(nodes ...int) *client.Client {
	if len(nodes) == 0 {
		nodes = c.Running()
	}
	addrs := make([]string, 0, len(nodes))
	for _, i := range nodes {
		addrs = append(addrs, c.Nodes[i].cfg.HTTPAddr)
	}
	return client.New(addrs, client.WithToken(c.token))
}

// Token is the cluster's admin credential (node 0's DATA/admin.token).
func (c *Cluster) Token() string { return c.token }

// HTTPAddr is node i's client API address (also while it is stopped).
func (c *Cluster) HTTPAddr(i int) string { return c.Nodes[i].cfg.HTTPAddr }

// WaitFor polls cond every 10 ms until it holds or the timeout passes.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// FreeAddr returns a loopback address no listener holds and that no other
// call in this test binary has returned: tests that pick ports of their
// own (a front door's) must take them here, or a node may be given the
// same one.
func FreeAddr(t testing.TB) string { return freeAddr(t) }

func freeAddr(t testing.TB) string {
	t.Helper()
	handedMu.Lock()
	defer handedMu.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		addr := ln.Addr().String()
		ln.Close()
		// Ports are picked before the nodes bind them: the kernel may
		// offer a closed one again, so never hand out the same one twice.
		if !handed[addr] {
			handed[addr] = true
			return addr
		}
	}
	t.Fatal("free port: the kernel keeps offering ports already handed out")
	return ""
}

var (
	handedMu sync.Mutex
	handed   = map[string]bool{} // addresses freeAddr returned in this test binary
)

func testLogger(t testing.TB, i int) *slog.Logger {
	if os.Getenv("MURE_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name(), "idx", i)
}
