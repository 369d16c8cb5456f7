package testbed

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/testcluster"
)

// TestSingleAddress: three nodes own one address on a hub-mode client
// network (paper 001's TCP-DSC on a stock kernel), through each SYN path:
// the kernel path (the master's TC program tags each SYN and sends it back
// on the segment) and the user path (tapped, forwarded, injected into the
// node's TUN). New connections spread by round robin within one of even,
// every answer checked; then, with transfers whose content is checked by
// SHA-256 under way: the master paused and resumed (nothing breaks), the
// master killed (only its own transfer breaks; the time until new
// connections are answered is printed), and a member killed with two nodes
// left (only its own breaks; the last node takes every new connection).
func TestSingleAddress(t *testing.T) {
	for _, path := range synPaths {
		t.Run(path, func(t *testing.T) { testSingleAddress(t, path) })
	}
}

// synPaths are the ways a master places SYNs that the tests run through.
var synPaths = []string{"kernel", "user"}

func testSingleAddress(t *testing.T, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tb, cip := upSingle(t, ctx, "mtbs-", "10.77.194.0/24", 2, path)
	defer tb.Down(context.Background())
	cfg := tb.Config

	// 15 new connections from each client host, one after the other.
	const perClient = 15
	for _, c := range tb.Clients() {
		connectAll(t, ctx, tb, c, tb.Servers()[0], cip, perClient, "connections from "+c.Name)
	}
	total, counts := 0, map[string]uint64{}
	for _, h := range tb.Servers() {
		st, err := singleStatus(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		counts[h.Name] = st.Injected
		total += int(st.Injected)
	}
	want := 2 * perClient
	if total < want {
		t.Fatalf("nodes injected %d SYNs for %d connections: %v", total, want, counts)
	}
	for name, n := range counts {
		if d := int(n) - total/3; d < -1 || d > 1 {
			t.Fatalf("round robin over 3 nodes: %v (%s not within 1 of even)", counts, name)
		}
	}
	t.Logf("%d connections to %s: SYNs injected per node %v", want, cip, counts)

	// The policy changes cluster-wide: least load runs only in user space,
	// least connections in the kernel too; the master follows, and new
	// connections are answered throughout.
	if path == "kernel" {
		for _, pol := range []struct{ name, path string }{
			{"least-load", "user"}, {"least-connections", "kernel"}, {"round-robin", "kernel"},
		} {
			setPolicy(t, ctx, tb, pol.name)
			waitFor(t, "the master to place SYNs by the "+pol.path+" path under "+pol.name, func() bool {
				for _, h := range tb.Servers() {
					if st, err := singleStatus(ctx, h); err == nil && st.Master {
						return st.Path == pol.path
					}
				}
				return false
			})
			connectAll(t, ctx, tb, tb.Clients()[0], tb.Servers()[0], cip, 6, "connections under "+pol.name)
		}
		t.Log("policy changed to least-load (user path), least-connections and round-robin (kernel path): 6 new connections answered under each")
	}

	// The master's node dies while three long transfers run, one on each
	// node: the two on the other nodes finish intact (the master is not on
	// their path); the dead node's own breaks; new connections work again
	// once another node is the master.
	size, sum := putEverywhere(t, ctx, tb, 16<<20)
	client := tb.Clients()[0]

	// The master is paused (SIGSTOP) during three transfers until another
	// node has taken over and placed new connections, then resumed: no
	// connection breaks (the paused node's own transfer stalls and goes
	// on), and the SYNs that waited in its tap are not placed again.
	paused := masterHost(ctx, t, tb)
	big := "http://" + cip + ":8080/files/single/big"
	// transfers starts k transfers of the file at once (node: the one
	// whose CPU the load generator polls) and returns once all are placed.
	transfers := func(report, timeout string, k int, node *Host) *exec.Cmd {
		dl := tb.Command(ctx, client, cfg.Binary, "bench", "conn-rate", "--url", big,
			"--node", node.HTTP(), "--clients", fmt.Sprint(k), "--count", fmt.Sprint(k), "--duration", "0",
			"--length", fmt.Sprint(size), "--sha256", sum, "--timeout", timeout, "--json", report)
		before := injectedTotal(ctx, t, tb)
		if err := dl.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("the %d transfers to be placed", k), func() bool { return injectedTotal(ctx, t, tb) >= before+uint64(k) })
		return dl
	}
	pauseReport := filepath.Join(t.TempDir(), "pause.json")
	dl := transfers(pauseReport, "30s", 3, tb.Servers()[0])
	if err := tb.Signal(paused, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	var successor *Host
	waitFor(t, "a successor master", func() bool {
		for _, h := range tb.Servers() {
			if h != paused {
				if st, err := singleStatus(ctx, h); err == nil && st.Master {
					successor = h
					return true
				}
			}
		}
		return false
	})
	takeover := time.Since(stopped)
	other := tb.Clients()[1]
	connectAll(t, ctx, tb, other, successor, cip, 15, "new connections during the pause")
	if err := tb.Signal(paused, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the resumed node to give the master role up", func() bool {
		st, err := singleStatus(ctx, paused)
		return err == nil && !st.Master
	})
	dl.Wait()
	if r := readConnReport(t, pauseReport); r.Errors != 0 || r.Requests != 3 {
		t.Fatalf("transfers across the pause: %+v; want all 3 intact", r)
	}
	st, _ := singleStatus(ctx, paused)
	t.Logf("master %s paused: %s took over after %v; 15 new connections answered meanwhile; after SIGCONT all 3 transfers finished intact; SYNs the paused master found waiting and dropped: %d",
		paused.Name, successor.Name, takeover.Round(time.Millisecond), st.Stale)

	master := masterHost(ctx, t, tb)
	report := filepath.Join(t.TempDir(), "big.json")
	dl = transfers(report, "8s", 3, tb.Servers()[0])
	if err := tb.Signal(master, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	window := untilConnects(t, ctx, tb, client, cfg.Binary, "http://"+cip+":8080/healthz")
	dl.Wait()
	g := readConnReport(t, report)
	if g.Requests-g.Errors < 2 || g.Errors > 1 {
		t.Fatalf("transfers while the master died: %d, %d failed %v; want the 2 on other nodes intact", g.Requests, g.Errors, g.ErrorKinds)
	}
	t.Logf("master %s killed during 3 transfers of %d MiB: %d finished intact (SHA-256 checked), %d broke (its own); new connections answered again %v after the kill",
		master.Name, size>>20, g.Requests-g.Errors, g.Errors, window.Round(time.Millisecond))

	// Two nodes left. The one that is not the master dies during two
	// transfers, one on each: only its own breaks, and the last node
	// then takes every new connection.
	last := masterHost(ctx, t, tb)
	var member *Host
	for _, h := range tb.Servers() {
		if h != master && h != last {
			member = h
		}
	}
	report = filepath.Join(t.TempDir(), "two.json")
	dl = transfers(report, "8s", 2, last)
	if err := tb.Signal(member, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	memberKilled := time.Now()
	untilAllConnect(t, ctx, tb, client, cfg.Binary, "http://"+cip+":8080/healthz", last, 10)
	alone := time.Since(memberKilled)
	dl.Wait()
	g = readConnReport(t, report)
	if g.Requests-g.Errors < 1 || g.Errors > 1 {
		t.Fatalf("transfers while a member died: %d, %d failed %v; want the master's own intact", g.Requests, g.Errors, g.ErrorKinds)
	}
	t.Logf("member %s killed during 2 transfers: %d intact, %d broke (its own); 10 new connections in a row answered by the last node %s %v after the kill",
		member.Name, g.Requests-g.Errors, g.Errors, last.Name, alone.Round(time.Millisecond))
}

// connectAll opens n new connections to cip:8080, one after the other,
// from client (node: the one whose CPU the load generator polls), and fails
// the test unless every one is answered.
func connectAll(t *testing.T, ctx context.Context, tb *Testbed, client, node *Host, cip string, n int, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	report := filepath.Join(t.TempDir(), "conns.json")
	out, err := tb.Command(ctx, client, tb.Config.Binary, "bench", "conn-rate", "--url", "http://"+cip+":8080/healthz",
		"--node", node.HTTP(), "--clients", "1", "--count", fmt.Sprint(n), "--duration", "0", "--timeout", "5s", "--json", report).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
	if r := readConnReport(t, report); r.Errors != 0 || r.Requests != int64(n) {
		t.Fatalf("%s: %d requests, %d errors %v\n%s", what, r.Requests, r.Errors, r.ErrorKinds, out)
	}
}

// untilAllConnect opens batches of n new connections from client to url
// until a whole batch is answered.
func untilAllConnect(t *testing.T, ctx context.Context, tb *Testbed, client *Host, bin, url string, node *Host, n int) {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 30*time.Second {
		report := filepath.Join(t.TempDir(), "batch.json")
		err := tb.Command(ctx, client, bin, "bench", "conn-rate", "--url", url, "--node", node.HTTP(),
			"--clients", "1", "--count", fmt.Sprint(n), "--duration", "0", "--timeout", "2s", "--json", report).Run()
		if err == nil {
			if r := readConnReport(t, report); r.Errors == 0 && r.Requests == int64(n) {
				return
			}
		}
	}
	t.Fatalf("no batch of %d new connections all answered within 30 s", n)
}

// upSingle brings up 3 servers in single-address mode (round robin, fast
// timing, SYNs placed by path) and the given number of client hosts on a hub, and waits until
// one SYN master is recognised by every node. It returns the testbed and
// the cluster address (clients reach the nodes at cip:8080).
func upSingle(t *testing.T, ctx context.Context, prefix, subnet string, clients int, path string) (*Testbed, string) {
	t.Helper()
	return upSingleWith(t, ctx, prefix, subnet, clients, path, nil)
}

// upSingleWith is upSingle with more configuration by change (nil: none).
func upSingleWith(t *testing.T, ctx context.Context, prefix, subnet string, clients int, path string, change func(*Config)) (*Testbed, string) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("testbed unavailable here: %v", err)
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("iptables not installed (scripts/test.sh installs it)")
	}
	cfg := Config{
		Servers: 3, Clients: clients, ServerLink: "100mbit", ClientLink: "500mbit", ServerCPU: 0.2, ClientCPU: 0.2,
		Binary: testcluster.BuildBinary(t), Hub: true,
		Prefix: prefix, Subnet: subnet, Dir: t.TempDir() + "/tb", Disk: DiskTmpfs, DataMB: 64, // the network is tested here
	}
	cip := (&Testbed{Config: cfg}).ClusterAddr()
	cfg.NodeArgs = []string{"--timing", "fast", "--front", cip + ":8080", "--front-mode", "single-address",
		"--front-vip", cip + "/24", "--front-iface", "eth1", "--front-policy", "round-robin", "--front-syn-path", path}
	if change != nil {
		change(&cfg)
	}
	tb, err := Up(ctx, cfg)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	waitFor(t, "one SYN master that every node recognises", func() bool {
		masters, holders, tagMasters := 0, map[string]bool{}, map[string]bool{}
		for _, h := range tb.Servers() {
			st, err := singleStatus(ctx, h)
			if err != nil {
				return false
			}
			if path == "kernel" || path == "isn-hash" {
				// every node takes the tags of the same master (isn-hash: its
				// own), ranked among 3
				m, _, ok := strings.Cut(st.Tag, "/")
				if !ok || !strings.HasSuffix(st.Tag, " of 3") {
					return false
				}
				tagMasters[m] = true
			}
			if st.Master {
				if st.Path != path {
					t.Fatalf("the master places SYNs by the %q path, want %q", st.Path, path)
				}
				masters++
			}
			holders[st.holder] = true
		}
		if path == "isn-hash" {
			return len(tagMasters) == 3 // every node takes its own share
		}
		return masters == 1 && len(holders) == 1 && !holders[""] && len(tagMasters) <= 1
	})
	return tb, cip
}

// setPolicy sets the cluster-wide scheduling policy (dispatch.policy).
func setPolicy(t *testing.T, ctx context.Context, tb *Testbed, name string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+tb.ServerHTTP()[0]+"/config/dispatch.policy", strings.NewReader(name))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("set dispatch.policy=%s: %s", name, resp.Status)
	}
}

// putEverywhere writes a file of size random bytes through a node's own
// address and waits until every running node serves it itself. It returns
// the size and the content's SHA-256 (hex), which every transfer checks.
func putEverywhere(t *testing.T, ctx context.Context, tb *Testbed, size int) (int, string) {
	t.Helper()
	node := "http://" + tb.ServerHTTP()[0]
	for k, v := range map[string]string{"resume": "immediate"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, node+"/config/"+k, strings.NewReader(v))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	body := make([]byte, size)
	rand.NewChaCha8([32]byte{6}).Read(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, node+"/files/single/big", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("put: %v %v", err, resp)
	}
	resp.Body.Close()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, addr := range tb.ServerHTTP() {
		deadline := time.Now().Add(60 * time.Second)
		for {
			resp, err := noFollow.Head("http://" + addr + "/files/single/big")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the file is not served by %s within 60 s (last: %v %v)", addr, resp, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	digest := sha256.Sum256(body)
	return size, hex.EncodeToString(digest[:])
}

func injectedTotal(ctx context.Context, t *testing.T, tb *Testbed) uint64 {
	var n uint64
	for _, h := range tb.Servers() {
		if st, err := singleStatus(ctx, h); err == nil {
			n += st.Injected
		}
	}
	return n
}

// untilConnects opens new connections from client to url until one is
// answered and returns how long that took.
func untilConnects(t *testing.T, ctx context.Context, tb *Testbed, client *Host, bin, url string) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 30*time.Second {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		report := filepath.Join(t.TempDir(), "one.json")
		err := tb.Command(cctx, client, bin, "bench", "conn-rate", "--url", url, "--node", tb.ServerHTTP()[1],
			"--clients", "1", "--count", "1", "--duration", "0", "--timeout", "5s", "--json", report).Run()
		cancel()
		var rep struct {
			Groups []struct{ Requests, Errors int64 } `json:"groups"`
		}
		if b, rerr := os.ReadFile(report); err == nil && rerr == nil && json.Unmarshal(b, &rep) == nil &&
			len(rep.Groups) == 1 && rep.Groups[0].Errors == 0 && rep.Groups[0].Requests == 1 {
			return time.Since(start)
		}
	}
	t.Fatal("no new connection answered within 30 s of the master's death")
	return 0
}

type singleStats struct {
	holder   string // the dispatcher role's holder in the node's view
	Master   bool   `json:"master"`
	Path     string `json:"path"`
	Tag      string `json:"accept_tag"`
	Injected uint64 `json:"injected"`
	Tapped   uint64 `json:"tapped"`
	Refused  uint64 `json:"refused"`
	Stale    uint64 `json:"stale"`
	Rebuilds uint64 `json:"rebuilds"`
	Rebuilt  uint64 `json:"rebuilt"`
}

// singleStatus asks the node of h for its single-address counters.
func singleStatus(ctx context.Context, h *Host) (singleStats, error) {
	var st struct {
		Dispatch struct {
			Holder string       `json:"holder"`
			Single *singleStats `json:"single_address"`
		} `json:"dispatch"`
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+h.HTTP()+"/status", nil)
	if tok, err := os.ReadFile(filepath.Join(h.Data, "admin.token")); err == nil {
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok))) // Config.Auth: the node's own credential
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return singleStats{}, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Dispatch.Single == nil {
		return singleStats{}, fmt.Errorf("status of %s: no single-address counters (%v)", h.Name, err)
	}
	s := *st.Dispatch.Single
	s.holder = st.Dispatch.Holder
	return s, nil
}

// connReport is what these tests read of a conn-rate JSON report.
type connReport struct {
	Requests, Errors int64
	ErrorKinds       map[string]int64 `json:"error_kinds"`
}

func readConnReport(t *testing.T, file string) connReport {
	t.Helper()
	var rep struct {
		Groups []connReport `json:"groups"`
	}
	b, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(b, &rep)
	}
	if err != nil || len(rep.Groups) != 1 {
		t.Fatalf("report %s: %v", file, err)
	}
	return rep.Groups[0]
}

// masterHost waits until exactly one server is the SYN master and returns it.
func masterHost(ctx context.Context, t *testing.T, tb *Testbed) *Host {
	t.Helper()
	var m *Host
	waitFor(t, "one SYN master", func() bool {
		m = nil
		for _, h := range tb.Servers() {
			if st, err := singleStatus(ctx, h); err == nil && st.Master {
				if m != nil {
					return false
				}
				m = h
			}
		}
		return m != nil
	})
	return m
}

// TestSingleAddressISN: 001's static baseline. No master: each of 3 nodes
// takes the SYNs whose initial sequence number modulo 3 is its rank. 30 new
// connections (random ISNs) are all answered, and every node takes some.
func TestSingleAddressISN(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tb, cip := upSingle(t, ctx, "mtbi-", "10.77.192.0/24", 1, "isn-hash")
	defer tb.Down(context.Background())
	connectAll(t, ctx, tb, tb.Clients()[0], tb.Servers()[0], cip, 30, "30 connections by ISN")
	counts := map[string]uint64{}
	for _, h := range tb.Servers() {
		st, err := singleStatus(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if st.Injected == 0 {
			t.Fatalf("%s took no connection (tag %q): %v", h.Name, st.Tag, counts)
		}
		counts[h.Name] = st.Injected
	}
	t.Logf("30 connections by ISN modulo 3, all answered: taken per node %v", counts)
}
