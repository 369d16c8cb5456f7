//go:build linux

package systest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestSessionRun: inside a session (a shell in tmux), `mure run -- CMD`
// starts an application session placed by its kind's policy on another
// node, shows its terminal inline, belongs to the session and is there
// again when the session is resumed after its client was killed. The
// session's credential (MURE_SESSION_TOKEN) does that and nothing else:
// no files, no status, no tokens, no other session of its user or of
// another user; it dies with the session.
func TestSessionRun(t *testing.T) {
	needSessions(t)
	figs := filepath.Join(t.TempDir(), "hosts.json")
	pc := testcluster.StartProc(t, 3, "--debug-host-figures", figs,
		"--session-kind", "app shell place=most-free-memory memory=256MiB",
		"--session-kind", "top command -- /bin/sleep 600")
	t.Cleanup(func() { killHolders(pc, 3) })
	ids := []string{pc.ID(0), pc.ID(1), pc.ID(2)}
	const mib = 1 << 20
	// n2 has the most free memory: applications go there.
	hosts := map[string]node.SimHost{
		ids[0]: {FreeMemory: 1024 * mib, SessionMemory: 256 * mib},
		ids[1]: {FreeMemory: 1536 * mib, SessionMemory: 256 * mib},
		ids[2]: {FreeMemory: 4096 * mib, SessionMemory: 256 * mib},
	}
	b, _ := json.Marshal(hosts)
	if err := os.WriteFile(figs, b, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := runnableBinary(t)
	admin := pc.Client(0)
	alice, bob := addSessionUser(t, admin), addSessionUser(t, admin)
	ctx := context.Background()
	ac := client.New([]string{pc.HTTPAddr(0)}, client.WithToken(alice.token))
	desk, err := ac.StartSession(ctx, client.NewSession{}) // a login shell on n0 (asked)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ac.StartSession(ctx, client.NewSession{Kind: "top"})
	if err != nil {
		t.Fatal(err)
	}
	bobs, err := client.New([]string{pc.HTTPAddr(0)}, client.WithToken(bob.token)).StartSession(ctx, client.NewSession{Kind: "top"})
	if err != nil {
		t.Fatal(err)
	}

	// Inside the desktop session: keep its credential where the test can
	// read it (the test plays the session's user), then mure run.
	tokFile := filepath.Join(os.TempDir(), randName("mure-run-tok-"))
	t.Cleanup(func() { os.Remove(tokFile) })
	tm := newTmux(t)
	tm.run("new-session", "-d", "-s", "keep", "sleep 600") // the tmux server outlives the clients killed below
	tm.attach("d", bin, pc.HTTPAddr(1), alice, desk.ID)
	tm.run("send-keys", "-t", "d", "echo $MURE_SESSION_TOKEN > "+tokFile+"; echo desk-$((1+1))ready", "Enter")
	tm.waitScreen("d", "desk-2ready")
	tm.run("send-keys", "-t", "d", bin+` run -- sh -c 'echo "app-$((1+1))up $MURE_SESSION"; while read l; do echo "got:$l"; done'`, "Enter")
	scr := tm.waitScreen("d", "app-2up ")
	var child string
	for _, line := range strings.Split(scr, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "app-2up" {
			child = f[1]
		}
	}
	var app client.Session
	for _, s := range sessionsOf(t, bin, pc.HTTPAddr(0), alice) {
		if s.ID == child {
			app = s
		}
	}
	switch {
	case app.ID == "":
		t.Fatalf("the application session %q is not listed:\n%s", child, scr)
	case app.Parent != desk.ID || app.Kind != "app" || app.Node != ids[2] || app.Placement == nil || app.Placement.Policy != "most-free-memory":
		t.Fatalf("the application session is %+v (placement %+v), want kind app, parent %s, on %s (most free memory)", app, app.Placement, desk.ID, ids[2])
	}

	// The client goes; the session is resumed through another node, with
	// the application still shown in it and live.
	tm.run("kill-session", "-t", "d")
	tm.attach("d2", bin, pc.HTTPAddr(2), alice, desk.ID)
	tm.waitScreen("d2", "app-2up "+child)
	tm.run("send-keys", "-t", "d2", "hello", "Enter")
	tm.waitScreen("d2", "got:hello")

	raw, err := os.ReadFile(tokFile)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(raw))
	if !strings.HasPrefix(tok, "mures_"+desk.ID+"_") {
		t.Fatalf("the session's credential is %q, want mures_%s_...", tok, desk.ID)
	}
	// What the credential may do: start and list the session's children.
	sc := client.New([]string{pc.HTTPAddr(1)}, client.WithToken(tok), client.WithAttempts(1))
	second, err := sc.StartSession(ctx, client.NewSession{Command: []string{"sleep", "600"}})
	if err != nil || second.Parent != desk.ID {
		t.Fatalf("a child through the session's credential: %+v, %v; want one with parent %s", second, err, desk.ID)
	}
	if list, err := sc.Sessions(ctx, false); err != nil || len(list) != 2 {
		t.Fatalf("the credential lists %d sessions (%v), want its 2 children", len(list), err)
	}
	// What it may not.
	refusals := []struct {
		name, method, path, body string
		status                   int
	}{
		{"read a file", "GET", "/files/x", "", 403},
		{"write a file", "PUT", "/files/x", "y", 403},
		{"list files", "GET", "/list?prefix=", "", 403},
		{"the status", "GET", "/status", "", 403},
		{"the metrics", "GET", "/metrics", "", 403},
		{"the history", "GET", "/history", "", 403},
		{"make a token", "POST", "/auth/tokens", `{"user":"` + alice.name + `","name":"x"}`, 403},
		{"a ticket for its own session", "POST", "/sessions/" + desk.ID + "/ticket", "", 403},
		{"its own session", "GET", "/sessions/" + desk.ID, "", 404},
		{"another session of its user", "GET", "/sessions/" + other.ID, "", 404},
		{"end another session of its user", "DELETE", "/sessions/" + other.ID, "", 404},
		{"attach to another session of its user", "GET", "/attach/" + other.ID, "", 404},
		{"another user's session", "GET", "/sessions/" + bobs.ID, "", 404},
		{"a child of another session", "POST", "/sessions", `{"parent":"` + other.ID + `"}`, 403},
		{"a web app", "GET", "/web/" + other.ID + "/", "", 403},
	}
	for _, r := range refusals {
		t.Run("refuses "+r.name, func(t *testing.T) {
			if a := call(t, pc.HTTPAddr(1), r.method, r.path, bearer(tok), r.body); a.status != r.status {
				t.Fatalf("%s %s with the session's credential: %d %v, want %d", r.method, r.path, a.status, a.body, r.status)
			}
		})
	}
	// The dashboard is outside the guard: its login asks the same.
	t.Run("refuses the dashboard", func(t *testing.T) {
		if resp, ck := uiCall(t, pc.HTTPAddr(1), "POST", "/ui/login", "", url.Values{"token": {tok}}, nil); resp.StatusCode != http.StatusForbidden || ck != nil {
			t.Fatalf("a dashboard login with the session's credential: %d (cookie %v), want 403 and no cookie", resp.StatusCode, ck)
		}
	})
	// Never written down: not in the nodes' files or logs.
	for i := range 3 {
		filepath.Walk(pc.Dir(i), func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() || fi.Size() > 8<<20 {
				return nil
			}
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(tok)) {
				t.Errorf("the session's credential is written in %s", p)
			}
			return nil
		})
	}

	// The session ends: its children with it, and its credential is dead.
	if err := ac.KillSession(ctx, desk.ID); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the application sessions to end with their session", func() bool {
		for _, s := range sessionsOf(t, bin, pc.HTTPAddr(0), alice) {
			if s.ID == child || s.ID == second.ID {
				return false
			}
		}
		return true
	})
	if a := call(t, pc.HTTPAddr(0), "GET", "/sessions", bearer(tok), ""); a.status != 401 {
		t.Fatalf("the credential of an ended session: %d %v, want 401", a.status, a.body)
	}
}

// runnableBinary is the mure binary where a session's account may run it.
func runnableBinary(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(testcluster.BuildBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "mure-run-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "mure")
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
