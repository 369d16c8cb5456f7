//go:build linux

package systest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/history"
	"github.com/mure-dev/mure/internal/testcluster"
)

// sessionUser is a mure user with a Unix account of its own (mure-NAME)
// and a token, made for one test and removed after it.
type sessionUser struct {
	name, account, token string
}

// needSessions skips unless this test may create Unix accounts and drive
// a terminal (root, useradd, tmux: scripts/test.sh installs tmux).
func needSessions(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sessions run as their user's own Unix account: the test creates accounts and needs root")
	}
	for _, prog := range []string{"useradd", "userdel", "tmux"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("%s is not installed (scripts/test.sh installs tmux)", prog)
		}
	}
}

func randName(prefix string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// addSessionUser makes a mure user, its token and its Unix account.
func addSessionUser(t testing.TB, c *client.Client) sessionUser {
	t.Helper()
	ctx := context.Background()
	u := sessionUser{name: randName("st")}
	u.account = "mure-" + u.name
	if out, err := exec.Command("useradd", "-m", "-s", "/bin/bash", u.account).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", u.account, err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command("pkill", "-KILL", "-u", u.account).Run()
		if out, err := exec.Command("userdel", "-r", "-f", u.account).CombinedOutput(); err != nil {
			t.Logf("userdel %s: %v: %s", u.account, err, out)
		}
	})
	if _, err := c.AddUser(ctx, client.UserChange{Name: u.name}); err != nil {
		t.Fatal(err)
	}
	tok, err := c.CreateToken(ctx, u.name, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	u.token = tok.Token
	return u
}

// killHolders ends every holder left in the nodes' data directories (a
// failed test's sessions).
func killHolders(pc *testcluster.ProcCluster, n int) {
	for i := 0; i < n; i++ {
		killHoldersIn(pc.Dir(i))
	}
}

// killHoldersIn ends every holder left in the data directory dir.
func killHoldersIn(dir string) {
	pids, _ := filepath.Glob(filepath.Join(dir, "sessions", "*", "pid"))
	for _, f := range pids {
		b, _ := os.ReadFile(f)
		if pid, err := strconv.Atoi(string(b)); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// mureCLI runs the mure binary as user u against node addr.
func mureCLI(t *testing.T, bin, addr string, u sessionUser, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "MURE_NODE="+addr, "MURE_TOKEN="+u.token)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// tmux drives real terminals on a private server.
type tmux struct {
	t    *testing.T
	sock string
}

func newTmux(t *testing.T) *tmux {
	tm := &tmux{t: t, sock: randName("mure-test-")}
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", tm.sock, "kill-server").Run() })
	return tm
}

func (tm *tmux) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// attach opens window name running mure session attach as u through addr.
func (tm *tmux) attach(name, bin, addr string, u sessionUser, id string) {
	cmd := "env MURE_NODE=" + addr + " MURE_TOKEN=" + u.token + " " + bin + " session attach " + id + "; sleep 60"
	if out, err := exec.Command("tmux", "-L", tm.sock, "has-session").CombinedOutput(); err != nil || strings.Contains(string(out), "no server") {
		tm.run("new-session", "-d", "-s", name, "-x", "80", "-y", "24", cmd)
		return
	}
	tm.run("new-session", "-d", "-s", name, "-x", "80", "-y", "24", cmd)
}

func (tm *tmux) screen(name string) string { return tm.run("capture-pane", "-p", "-t", name) }

// waitScreen polls window name's screen until it holds want.
func (tm *tmux) waitScreen(name, want string) string {
	tm.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := tm.screen(name)
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("after 10s the screen of %s does not show %q:\n%s", name, want, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func sessionsOf(t *testing.T, bin, addr string, u sessionUser) []client.Session {
	t.Helper()
	out, err := mureCLI(t, bin, addr, u, "session", "ls", "--json")
	if err != nil {
		t.Fatalf("mure session ls: %v: %s", err, out)
	}
	var list []client.Session
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("ls --json: %v: %s", err, out)
	}
	return list
}

// TestSessions drives real terminals (tmux) attached with the CLI to a
// three-node process cluster: a session keeps running while no client is
// attached, is resumed through another node with what it wrote
// meanwhile, survives its node's mure being killed and restarted, runs
// as its user's own account, and is refused to another user.
func TestSessions(t *testing.T) {
	needSessions(t)
	// A program that tries to start 30 processes, for the limit of 8: a
	// file the session's account can read.
	forks := filepath.Join(os.TempDir(), randName("mure-forks-")+".py")
	if err := os.WriteFile(forks, []byte(forksPy), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(forks) })
	webApp := filepath.Join(os.TempDir(), randName("mure-web-")+".py")
	if err := os.WriteFile(webApp, []byte(webPy), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(webApp) })
	pc := testcluster.StartProc(t, 3, "--session-lost-after", "2s",
		"--session-kind", "quiet command idle=4s warn=3s -- /bin/sh -c 'sleep 600'",
		"--session-kind", "busy command idle=4s cpus=0.1 -- /bin/sh -c 'while :; do :; done'",
		"--session-kind", "few command processes=8 -- /usr/bin/python3 "+forks,
		"--session-kind", "app web -- /usr/bin/python3 "+webApp,
		"--session-kind", "hog command memory=32MiB -- /usr/bin/python3 -c 'import time; time.sleep(2); b = bytearray(256 << 20); print(len(b)); time.sleep(60)'",
		"--session-kind", "keep command restart=elsewhere -- /bin/sh -c 'echo started; exec sleep 600'")
	t.Cleanup(func() { killHolders(pc, 3) })
	bin := testcluster.BuildBinary(t)
	admin := pc.Client(0)
	alice, bob := addSessionUser(t, admin), addSessionUser(t, admin)
	tm := newTmux(t)

	out, err := mureCLI(t, bin, pc.HTTPAddr(0), alice, "session", "new", "--json")
	if err != nil {
		t.Fatalf("session new: %v: %s", err, out)
	}
	var s client.Session
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.ID == "" || s.Node != pc.ID(0) {
		t.Fatalf("session new answered %s (%v): want an id on node %s", out, err, pc.ID(0))
	}

	t.Run("resume through another node", func(t *testing.T) {
		tm.attach("a", bin, pc.HTTPAddr(0), alice, s.ID)
		tm.waitScreen("a", "$")
		// The node's secrets are out of the session's reach.
		key := filepath.Join(pc.Dir(0), "cluster.key")
		tm.run("send-keys", "-t", "a", "cat "+key+" || echo no-key-$((1+1))", "Enter")
		tm.waitScreen("a", "no-key-2")
		tm.run("send-keys", "-t", "a", "echo me-$(id -un)-$(id -u)-; (sleep 1; echo written-while-away) &", "Enter")
		scr := tm.waitScreen("a", "me-"+alice.account+"-")
		if strings.Contains(scr, "me-"+alice.account+"-0-") {
			t.Fatalf("the session runs as uid 0:\n%s", scr)
		}
		// Kill the attached client; the program writes while nobody looks.
		tm.run("kill-session", "-t", "a")
		time.Sleep(1500 * time.Millisecond) // the program's own sleep: what it writes is the point
		tm.attach("b", bin, pc.HTTPAddr(1), alice, s.ID)
		scr = tm.waitScreen("b", "written-while-away")
		if !strings.Contains(scr, "me-"+alice.account+"-") {
			t.Fatalf("the resumed screen lacks the earlier output:\n%s", scr)
		}
		tm.run("kill-session", "-t", "b")
	})

	t.Run("another user is refused", func(t *testing.T) {
		for _, args := range [][]string{{"session", "attach", s.ID}, {"session", "kill", s.ID}} {
			out, err := mureCLI(t, bin, pc.HTTPAddr(1), bob, args...)
			if err == nil || !strings.Contains(out, "no such session") {
				t.Errorf("bob's %v: %v, %s: want 'no such session'", args, err, out)
			}
		}
		if l := sessionsOf(t, bin, pc.HTTPAddr(0), bob); len(l) != 0 {
			t.Errorf("bob lists %d sessions, want none", len(l))
		}
	})

	t.Run("the dashboard lists a session to its owner only", func(t *testing.T) {
		type row struct{ ID, User, Kind, Node, State string }
		list := func(token string) ([]row, string) {
			var l []row
			raw, ok := uiGet(t, pc.HTTPAddr(1), token, "/ui/api/sessions", &l)
			if !ok {
				t.Fatalf("GET /ui/api/sessions: %s", raw)
			}
			return l, string(raw)
		}
		for _, tc := range []struct {
			who   string
			token string
			sees  bool
		}{{"alice", alice.token, true}, {"bob", bob.token, false}, {"an admin", pc.Token(), true}} {
			l, raw := list(tc.token)
			var found bool
			for _, r := range l {
				found = found || r.ID == s.ID && r.User == alice.name && r.Kind == "shell" && r.Node == pc.ID(0) && r.State == "running"
				if r.User != alice.name && tc.who == "alice" {
					t.Errorf("alice's dashboard lists %s's session %s", r.User, r.ID)
				}
			}
			if found != tc.sees {
				t.Errorf("%s's dashboard lists %s (want the session shown: %v)", tc.who, raw, tc.sees)
			}
			for _, secret := range []string{"ticket", "secret"} {
				if strings.Contains(strings.ToLower(raw), secret) {
					t.Errorf("%s's dashboard list mentions a %s: %s", tc.who, secret, raw)
				}
			}
		}
		// Node 0's history counts the session it runs.
		testcluster.WaitFor(t, 10*time.Second, "node 1's history to count node 0's running session", func() bool {
			var d history.Dump
			if _, ok := uiGet(t, pc.HTTPAddr(1), pc.Token(), "/ui/api/history?node="+pc.ID(0), &d); !ok {
				return false
			}
			fine := d.Nodes[pc.ID(0)].Fine
			return len(fine) > 0 && fine[len(fine)-1].V[history.SessionsRunning] >= 1
		})
	})

	t.Run("restart of mure keeps the session", func(t *testing.T) {
		pc.Kill(0)
		testcluster.WaitFor(t, 10*time.Second, "the session to show lost", func() bool {
			l := sessionsOf(t, bin, pc.HTTPAddr(1), alice)
			return len(l) == 1 && l[0].State == "lost"
		})
		pc.Restart(0)
		testcluster.WaitFor(t, 10*time.Second, "the session to run again", func() bool {
			l := sessionsOf(t, bin, pc.HTTPAddr(2), alice)
			return len(l) == 1 && l[0].State == "running"
		})
		tm.attach("c", bin, pc.HTTPAddr(2), alice, s.ID)
		tm.waitScreen("c", "written-while-away")
		tm.run("send-keys", "-t", "c", "echo after-restart", "Enter")
		tm.waitScreen("c", "after-restart\n")
		tm.run("kill-session", "-t", "c")
	})

	t.Run("idle culling spares the busy", func(t *testing.T) {
		var ids []string
		for _, k := range []string{"quiet", "busy"} {
			out, err := mureCLI(t, bin, pc.HTTPAddr(1), alice, "session", "new", "--kind", k, "--json")
			if err != nil {
				t.Fatalf("session new %s: %v: %s", k, err, out)
			}
			var v client.Session
			_ = json.Unmarshal([]byte(out), &v)
			ids = append(ids, v.ID)
		}
		tm.attach("q", bin, pc.HTTPAddr(1), alice, ids[0])
		tm.waitScreen("q", "idle")
		testcluster.WaitFor(t, 15*time.Second, "the quiet session to be culled", func() bool {
			for _, v := range sessionsOf(t, bin, pc.HTTPAddr(1), alice) {
				if v.ID == ids[0] {
					return false
				}
			}
			return true
		})
		tm.waitScreen("q", "ended")
		var busy *client.Session
		for _, v := range sessionsOf(t, bin, pc.HTTPAddr(1), alice) {
			if v.ID == ids[1] {
				busy = &v
			}
		}
		if busy == nil {
			t.Fatal("the busy but silent session was culled")
		}
		// It spins, but its cgroup gives it 10% of a core (cpus=0.1).
		if lim := 0.1*float64(busy.AgeSeconds+1) + 0.3; busy.CPUSeconds <= 0 || busy.CPUSeconds > lim {
			t.Errorf("the spinning session used %.2f s of CPU in %d s, want some and at most %.2f (cpus=0.1)", busy.CPUSeconds, busy.AgeSeconds, lim)
		}
		if out, err := mureCLI(t, bin, pc.HTTPAddr(0), alice, "session", "kill", ids[1]); err != nil {
			t.Fatalf("kill: %v: %s", err, out)
		}
	})

	t.Run("limits", func(t *testing.T) {
		var st struct {
			Services map[string]struct {
				Limits bool `json:"limits"`
			} `json:"services"`
		}
		raw, err := admin.Status(context.Background())
		if err != nil || json.Unmarshal(raw, &st) != nil {
			t.Fatalf("status: %v", err)
		}
		if !st.Services["sessions"].Limits {
			t.Skip("this node cannot create cgroups: limits are not enforced")
		}
		out, err := mureCLI(t, bin, pc.HTTPAddr(0), alice, "session", "new", "--kind", "few", "--json")
		if err != nil {
			t.Fatalf("session new few: %v: %s", err, out)
		}
		var v client.Session
		_ = json.Unmarshal([]byte(out), &v)
		tm.attach("f", bin, pc.HTTPAddr(0), alice, v.ID)
		scr := tm.waitScreen("f", "started ")
		var n int
		if _, err := fmt.Sscanf(scr[strings.Index(scr, "started "):], "started %d", &n); err != nil || n < 1 || n > 7 {
			t.Fatalf("the session started %d of 30 processes (%v), want 1-7 under processes=8:\n%s", n, err, scr)
		}
		tm.run("kill-session", "-t", "f")
		if out, err := mureCLI(t, bin, pc.HTTPAddr(0), alice, "session", "kill", v.ID); err != nil {
			t.Fatalf("kill: %v: %s", err, out)
		}
	})

	t.Run("memory limit", func(t *testing.T) {
		var st struct {
			Services map[string]struct {
				Limits bool `json:"limits"`
			} `json:"services"`
		}
		raw, err := admin.Status(context.Background())
		if err != nil || json.Unmarshal(raw, &st) != nil || !st.Services["sessions"].Limits {
			t.Skip("this node cannot create cgroups: limits are not enforced")
		}
		// The program waits 2 s before it allocates: time to attach and see.
		out, err := mureCLI(t, bin, pc.HTTPAddr(0), alice, "session", "new", "--kind", "hog", "--json")
		if err != nil {
			t.Fatalf("session new hog: %v: %s", err, out)
		}
		var v client.Session
		_ = json.Unmarshal([]byte(out), &v)
		tm.attach("h", bin, pc.HTTPAddr(0), alice, v.ID)
		scr := tm.waitScreen("h", "session "+v.ID+" ended")
		if strings.Contains(scr, "268435456") || !strings.Contains(scr, "status -1") {
			t.Fatalf("a session limited to 32 MiB was not killed allocating 256 MiB:\n%s", scr)
		}
		tm.run("kill-session", "-t", "h")
	})

	t.Run("bad input", func(t *testing.T) {
		ac := client.New([]string{pc.HTTPAddr(1)}, client.WithToken(alice.token))
		for _, n := range []client.NewSession{{Kind: "nope"}, {Cols: 0, Rows: 5}, {Cols: 2000, Rows: 10}} {
			if _, err := ac.StartSession(context.Background(), n); !isStatus(err, 400) {
				t.Errorf("start %+v: %v, want 400", n, err)
			}
		}
		if _, err := ac.AttachSession(context.Background(), s.ID, 60000, 60000); !isStatus(err, 400) {
			t.Errorf("attach at 60000x60000: %v, want 400", err)
		}
		// A resize to nothing is ignored: the session goes on at its size.
		conn, err := ac.AttachSession(context.Background(), s.ID, 70, 20)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := conn.Resize(ctx, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := conn.Write(ctx, []byte("stty size\r")); err != nil {
			t.Fatal(err)
		}
		var seen strings.Builder
		for !strings.Contains(seen.String(), "20 70") {
			p, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("stty size after a 0x0 resize: %v; read %q", err, seen.String())
			}
			seen.Write(p)
		}
		conn.Close()
		carol := sessionUser{name: randName("nx")}
		if _, err := admin.AddUser(context.Background(), client.UserChange{Name: carol.name}); err != nil {
			t.Fatal(err)
		}
		tok, err := admin.CreateToken(context.Background(), carol.name, "t", 0)
		if err != nil {
			t.Fatal(err)
		}
		cc := client.New([]string{pc.HTTPAddr(0)}, client.WithToken(tok.Token))
		if _, err := cc.StartSession(context.Background(), client.NewSession{}); !isStatus(err, 409) || !strings.Contains(err.Error(), "mure-"+carol.name) {
			t.Errorf("a user without an account: %v, want 409 naming mure-%s", err, carol.name)
		}
	})

	t.Run("web app through another node", func(t *testing.T) {
		out, err := mureCLI(t, bin, pc.HTTPAddr(0), alice, "session", "new", "--kind", "app", "--json")
		if err != nil {
			t.Fatalf("session new app: %v: %s", err, out)
		}
		var v client.Session
		_ = json.Unmarshal([]byte(out), &v)
		if v.Web != "/web/"+v.ID+"/" {
			t.Fatalf("web path %q", v.Web)
		}
		get := func(tok, path string) (int, string) {
			req, _ := http.NewRequest(http.MethodGet, "http://"+pc.HTTPAddr(2)+path, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
			if err != nil {
				return 0, err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		want := "hello from " + alice.account + " at " + v.Web + "x?y=1"
		testcluster.WaitFor(t, 10*time.Second, "the web app to answer through node 2: "+want, func() bool {
			code, b := get(alice.token, v.Web+"x?y=1")
			return code == 200 && b == want
		})
		if code, b := get(bob.token, v.Web+"x"); code != 404 {
			t.Errorf("bob reached alice's app: %d %s", code, b)
		}
		if out, err := mureCLI(t, bin, pc.HTTPAddr(2), alice, "session", "kill", v.ID); err != nil {
			t.Fatalf("kill: %v: %s", err, out)
		}
	})

	t.Run("restart elsewhere", func(t *testing.T) {
		out, err := mureCLI(t, bin, pc.HTTPAddr(0), alice, "session", "new", "--kind", "keep", "--on", pc.ID(2), "--json")
		if err != nil {
			t.Fatalf("session new keep: %v: %s", err, out)
		}
		var v client.Session
		_ = json.Unmarshal([]byte(out), &v)
		if v.Node != pc.ID(2) {
			t.Fatalf("started on %s, want %s", v.Node, pc.ID(2))
		}
		oldPID, _ := os.ReadFile(filepath.Join(pc.Dir(2), "sessions", v.ID, "pid"))
		pc.Kill(2)
		var moved client.Session
		testcluster.WaitFor(t, 15*time.Second, "the session to run on another node", func() bool {
			for _, l := range sessionsOf(t, bin, pc.HTTPAddr(0), alice) {
				if l.ID == v.ID && l.Node != pc.ID(2) && l.State == "running" {
					moved = l
					return true
				}
			}
			return false
		})
		if moved.Restarts != 1 {
			t.Errorf("restarts %d, want 1", moved.Restarts)
		}
		tm.attach("k", bin, pc.HTTPAddr(1), alice, v.ID)
		tm.waitScreen("k", "started")
		tm.run("kill-session", "-t", "k")
		// Back, node 2 ends the holder it kept: the session lives elsewhere.
		pc.Restart(2)
		pid, _ := strconv.Atoi(string(oldPID))
		testcluster.WaitFor(t, 10*time.Second, "node 2 to end its stale holder", func() bool {
			return pid > 0 && syscall.Kill(pid, 0) != nil
		})
		if out, err := mureCLI(t, bin, pc.HTTPAddr(1), alice, "session", "kill", v.ID); err != nil {
			t.Fatalf("kill: %v: %s", err, out)
		}
	})

	if out, err := mureCLI(t, bin, pc.HTTPAddr(1), alice, "session", "kill", s.ID); err != nil {
		t.Fatalf("kill: %v: %s", err, out)
	}
	testcluster.WaitFor(t, 10*time.Second, "alice to have no session left", func() bool {
		return len(sessionsOf(t, bin, pc.HTTPAddr(2), alice)) == 0
	})
}

const forksPy = `import subprocess, time
n = 0
for i in range(30):
    try:
        subprocess.Popen(["sleep", "600"])
        n += 1
    except OSError:
        pass
print("started", n, flush=True)
time.sleep(600)
`

// webPy is a web session's app: it answers only the node's proxy (the
// session's secret) and says who it runs as.
const webPy = `import os, http.server
secret = os.environ["MURE_SESSION_SECRET"]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.headers.get("X-Mure-Session-Secret") != secret:
            self.send_response(403)
            self.end_headers()
            return
        body = ("hello from " + os.environ["USER"] + " at " + self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
`

// isStatus reports whether err is an API error with that status.
func isStatus(err error, status int) bool {
	var ae *client.APIError
	return errors.As(err, &ae) && ae.Status == status
}
