//go:build linux

// The process cluster: nodes run as separate OS processes of the built
// mure binary, so that tests can kill -9, SIGSTOP and SIGTERM them. Linux
// only (signals, and Pdeathsig so that no node outlives a crashed test).

package testcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/node"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// BuildBinary builds ./cmd/mure once per test binary run (without -race, to
// keep the nodes fast) and returns the path of the executable. The binary
// lives in a directory shared by every test of the run.
func BuildBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "mure-proc-bin-")
		if err != nil {
			buildErr = fmt.Errorf("temp dir for the mure binary: %w", err)
			return
		}
		out := filepath.Join(dir, "mure")
		cmd := exec.Command("go", "build", "-o", out, "github.com/mure-dev/mure/cmd/mure")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/mure: %w\n%s", err, b)
			return
		}
		buildPath = out
	})
	if buildErr != nil {
		t.Fatalf("build mure: %v", buildErr)
	}
	return buildPath
}

// RemoveBinary deletes what BuildBinary built; call it from TestMain after
// the tests ran.
func RemoveBinary() {
	if buildPath != "" {
		os.RemoveAll(filepath.Dir(buildPath))
	}
}

// moduleRoot walks up from the working directory to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// ProcCluster is a set of nodes running as separate processes.
type ProcCluster struct {
	t     testing.TB
	bin   string
	mu    sync.Mutex
	nodes []*procNode
	hc    *http.Client
	extra []string // flags added to every node's command line
	token string   // the admin credential of node 0
}

// Token is the cluster's admin credential (node 0's DATA/admin.token).
func (c *ProcCluster) Token() string { return c.token }

// procNode is one node: its fixed addresses and data directory, and the
// current process (nil before the first start).
type procNode struct {
	idx        int
	dir        string
	logPath    string
	http, peer string
	id         string // learnt from /status once ready; kept across restarts
	p          *proc
}

// proc is one run of the binary.
type proc struct {
	cmd     *exec.Cmd
	log     *os.File
	done    chan struct{} // closed when the process has exited
	err     error         // cmd.Wait's result, valid after done
	stopped bool          // SIGSTOPped
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// StartProc starts n node processes: node 0 founds the cluster and the
// others join it with its key. It returns when every node is ready and a
// node lists n active raft members.
func StartProc(t testing.TB, n int, extraArgs ...string) *ProcCluster {
	t.Helper()
	c := &ProcCluster{t: t, bin: BuildBinary(t), hc: &http.Client{Timeout: 2 * time.Second}, extra: extraArgs}
	base := t.TempDir() // before the Cleanup below: removed after the processes are gone
	for i := 0; i < n; i++ {
		dir := filepath.Join(base, fmt.Sprintf("n%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, &procNode{idx: i, dir: dir, logPath: filepath.Join(dir, "mure.log"),
			http: freeAddr(t), peer: freeAddr(t)})
	}
	t.Cleanup(c.shutdown)
	for i := 0; i < n; i++ {
		args := c.baseArgs(i)
		if i > 0 {
			args = append(args, "--join", c.nodes[0].peer, "--key-file", filepath.Join(c.nodes[0].dir, "cluster.key"))
		}
		c.start(i, args)
		if i == 0 {
			c.token = readAdminToken(t, c.nodes[0].dir)
			c.hc.Transport = Authorize(nil)
			register(c.token, frontAddr(extraArgs))
		}
		register(c.token, c.nodes[i].http)
		c.WaitReady(i)
	}
	c.waitMembers(n)
	return c
}

// frontAddr returns the --front address among a node's flags ("" if none).
func frontAddr(args []string) string {
	for i, a := range args {
		if a == "--front" && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--front="); ok {
			return v
		}
	}
	return ""
}

func (c *ProcCluster) baseArgs(i int) []string {
	nd := c.nodes[i]
	return append([]string{"serve", "--data", nd.dir, "--http", nd.http, "--peer", nd.peer,
		"--timing", "fast", "--unsafe-no-fsync", "--log-level", "warn"}, c.extra...)
}

func (c *ProcCluster) start(i int, args []string) {
	c.t.Helper()
	nd := c.nodes[i]
	lf, err := os.OpenFile(nd.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatalf("node %d log: %v", i, err)
	}
	fmt.Fprintf(lf, "==== %s: mure %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		c.t.Fatalf("start node %d: %v", i, err)
	}
	p := &proc{cmd: cmd, log: lf, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	c.mu.Lock()
	nd.p = p
	c.mu.Unlock()
}

func (c *ProcCluster) proc(i int) *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].p
}

// shutdown kills every process and waits for it; on failure it logs the
// end of each node's log.
func (c *ProcCluster) shutdown() {
	for i := range c.nodes {
		if p := c.proc(i); p != nil && !p.exited() {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
	}
	if c.t.Failed() {
		for _, nd := range c.nodes {
			c.t.Logf("node %d (%s, http %s) log, last 50 lines:\n%s", nd.idx, nd.id, nd.http, tail(nd.logPath, 50))
		}
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// signal sends sig to node i's running process.
func (c *ProcCluster) signal(i int, sig syscall.Signal) *proc {
	c.t.Helper()
	p := c.proc(i)
	if p == nil || p.exited() {
		c.t.Fatalf("node %d: no running process to send %v to", i, sig)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("node %d: %v: %v", i, sig, err)
	}
	return p
}

// Kill sends SIGKILL to node i and waits for the process to exit.
func (c *ProcCluster) Kill(i int) {
	c.t.Helper()
	p := c.signal(i, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		c.t.Fatalf("node %d did not exit within 10s of SIGKILL", i)
	}
}

// Pause freezes node i (SIGSTOP): it keeps its sockets but runs nothing.
func (c *ProcCluster) Pause(i int) {
	c.t.Helper()
	p := c.signal(i, syscall.SIGSTOP)
	c.mu.Lock()
	p.stopped = true
	c.mu.Unlock()
}

// Resume resumes a node frozen by Pause (SIGCONT).
func (c *ProcCluster) Resume(i int) {
	c.t.Helper()
	p := c.signal(i, syscall.SIGCONT)
	c.mu.Lock()
	p.stopped = false
	c.mu.Unlock()
}

// Stop stops node i gracefully: SIGTERM, then it waits up to 30 s for the
// process to exit; it returns the process's exit error (nil: exit status
// 0). A node still up after 30 s is killed and the test fails.
func (c *ProcCluster) Stop(i int) error {
	c.t.Helper()
	p := c.signal(i, syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		c.t.Fatalf("node %d did not exit within 30s of SIGTERM (killed)", i)
		return nil
	}
}

// Restart starts node i again with only its data directory and its old
// addresses (no --join, no --key-file): both come from the data
// directory. A process still running is killed first. It does not wait
// for readiness (see WaitReady).
func (c *ProcCluster) Restart(i int) {
	c.t.Helper()
	if p := c.proc(i); p != nil && !p.exited() {
		c.Kill(i)
	}
	c.start(i, c.baseArgs(i))
}

// Isolate cuts node i off from its peers at the transport (on) or heals
// it; the nodes must run with --debug-faults.
func (c *ProcCluster) Isolate(i int, on bool) {
	c.t.Helper()
	v := "0"
	if on {
		v = "1"
	}
	// A node that has just restarted may not have applied the record of
	// the token yet: it answers 503 (retry) until it has.
	deadline := time.Now().Add(15 * time.Second)
	var resp *http.Response
	for {
		var err error
		resp, err = c.hc.Post("http://"+c.nodes[i].http+"/debug/isolate?on="+v, "", nil)
		if err != nil {
			c.t.Fatalf("isolate node %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("isolate node %d: status %d (started without --debug-faults?)", i, resp.StatusCode)
	}
}

// HTTPAddr is node i's client API address (also while it is down).
func (c *ProcCluster) HTTPAddr(i int) string { return c.nodes[i].http }

// PeerAddr is node i's peer address.
func (c *ProcCluster) PeerAddr(i int) string { return c.nodes[i].peer }

// Dir is node i's data directory (its log is Dir/mure.log).
func (c *ProcCluster) Dir(i int) string { return c.nodes[i].dir }

// ID is node i's node id, learnt when it first became ready.
func (c *ProcCluster) ID(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].id
}

// Running returns the indexes of nodes whose process is up (frozen or not).
func (c *ProcCluster) Running() []int {
	var out []int
	for i := range c.nodes {
		if p := c.proc(i); p != nil && !p.exited() {
			out = append(out, i)
		}
	}
	return out
}

// responsive returns the running nodes that are not frozen.
func (c *ProcCluster) responsive() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for i, nd := range c.nodes {
		if nd.p != nil && !nd.p.exited() && !nd.p.stopped {
			out = append(out, i)
		}
	}
	return out
}

// Client returns a client of the given nodes (all running ones when none
// given), with the client's default retries.
func (c *ProcCluster) Client(nodes ...int) *client.Client {
	if len(nodes) == 0 {
		nodes = c.Running()
	}
	addrs := make([]string, 0, len(nodes))
	for _, i := range nodes {
		addrs = append(addrs, c.nodes[i].http)
	}
	return client.New(addrs, client.WithToken(c.token))
}

// status reads node i's GET /status, the document node.Status describes.
func (c *ProcCluster) status(i int) (*node.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.nodes[i].http+"/status", nil)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /status on node %d: %s", i, resp.Status)
	}
	var st node.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, err
	}
	return &st, nil
}

// WaitReady waits until node i answers 200 on /readyz (joined, has a
// leader, holds a read lease), and records its node id.
func (c *ProcCluster) WaitReady(i int) {
	c.t.Helper()
	WaitFor(c.t, 30*time.Second, fmt.Sprintf("node %d ready", i), func() bool {
		p := c.proc(i)
		if p == nil {
			return false
		}
		if p.exited() {
			c.t.Fatalf("node %d exited while waiting for it to be ready (%v); log:\n%s", i, p.err, tail(c.nodes[i].logPath, 50))
		}
		resp, err := c.hc.Get("http://" + c.nodes[i].http + "/readyz")
		if err != nil {
			return false
		}
		var body struct {
			Node string `json:"node"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || body.Node == "" {
			return false
		}
		c.mu.Lock()
		c.nodes[i].id = body.Node
		c.mu.Unlock()
		return true
	})
}

// waitMembers waits until some node's /status lists n active raft members.
func (c *ProcCluster) waitMembers(n int) {
	c.t.Helper()
	WaitFor(c.t, 30*time.Second, fmt.Sprintf("%d active members", n), func() bool {
		for _, i := range c.responsive() {
			st, err := c.status(i)
			if err != nil {
				continue
			}
			active := 0
			for _, m := range st.Members {
				if m.State == meta.NodeActive && (m.Suffrage == "voter" || m.Suffrage == "nonvoter") {
					active++
				}
			}
			if active >= n {
				return true
			}
		}
		return false
	})
}

// Leader waits until the running, unfrozen nodes agree on a leader
// that is one of them, and returns its index: a node's /status names the
// leader by id ("leader"), mapped to an index through each node's
// "node"."id", and the leader's own /status must name itself.
func (c *ProcCluster) Leader() int {
	c.t.Helper()
	idx := -1
	WaitFor(c.t, 15*time.Second, "a leader among the running nodes", func() bool {
		ids := map[string]int{}
		leaders := map[int]string{}
		for _, i := range c.responsive() {
			st, err := c.status(i)
			if err != nil {
				continue
			}
			ids[st.Node.ID] = i
			leaders[i] = st.Leader
		}
		for _, l := range leaders {
			j, ok := ids[l]
			if l == "" || !ok || leaders[j] != l {
				continue
			}
			idx = j
			return true
		}
		return false
	})
	return idx
}

// Log returns node i's whole log (stdout and stderr of every run).
func (c *ProcCluster) Log(i int) string {
	b, _ := os.ReadFile(c.nodes[i].logPath)
	return string(bytes.ToValidUTF8(b, []byte("?")))
}
