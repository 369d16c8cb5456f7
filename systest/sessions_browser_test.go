//go:build linux

package systest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestSessionInBrowser drives the browser terminal (xterm.js at /term/)
// in chromium: sign in with a password on node 0, start a shell, type,
// start an application session of it with the page's launcher (placed
// by its kind's policy on the node with the most free memory, shown in a
// second pane, listed as the shell's child); close the page; open node
// 1's address, sign in, pick the session, and see the earlier output on
// its screen.
func TestSessionInBrowser(t *testing.T) {
	needSessions(t)
	bctx := browser(t)
	figs := filepath.Join(t.TempDir(), "hosts.json")
	pc := testcluster.StartProc(t, 2, "--debug-host-figures", figs,
		"--session-kind", "app shell place=most-free-memory")
	t.Cleanup(func() { killHolders(pc, 2) })
	const mib = 1 << 20
	b, _ := json.Marshal(map[string]node.SimHost{ // n1 has the most free memory
		pc.ID(0): {FreeMemory: 1024 * mib, SessionMemory: 256 * mib},
		pc.ID(1): {FreeMemory: 4096 * mib, SessionMemory: 256 * mib},
	})
	if err := os.WriteFile(figs, b, 0o644); err != nil {
		t.Fatal(err)
	}
	u := addSessionUser(t, pc.Client(0))
	const password = "browser-pass-1"
	if _, err := pc.Client(0).SetUser(context.Background(), u.name, client.UserChange{Password: ptr(password)}); err != nil {
		t.Fatal(err)
	}
	pane := "main" // the page's terminal waitScreen reads; "child": the launcher's pane
	screen := func(ctx context.Context) string {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.mureScreen ? window.mureScreen("`+pane+`") : ""`))
		if err != nil {
			t.Fatalf("read the screen: %v", err)
		}
		return v
	}
	waitScreen := func(ctx context.Context, want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for s := screen(ctx); !strings.Contains(s, want); s = screen(ctx) {
			if time.Now().After(deadline) {
				dbg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelectorAll('#term textarea').length + ' ' + document.activeElement.className + ' ' + document.getElementById('status').textContent`))
				t.Fatalf("the page's terminal does not show %q (%s):\n%q", want, dbg, s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	signIn := func(ctx context.Context, node int) {
		t.Helper()
		if err := chromedp.Do(ctx,
			chromedp.Navigate("http://"+pc.HTTPAddr(node)+"/term/"),
			chromedp.WaitVisible(`#login`),
			chromedp.SendKeys(`#user`, u.name),
			chromedp.SendKeys(`#secret`, password),
			chromedp.Click(`#signin`),
			chromedp.WaitVisible(`#pick`),
		); err != nil {
			t.Fatalf("sign in on node %d: %v", node, err)
		}
	}

	first, closeFirst := chromedp.NewContext(bctx)
	signIn(first, 0)
	if err := chromedp.Do(first, chromedp.Click(`#new`), chromedp.WaitVisible(`#term .xterm`)); err != nil {
		t.Fatalf("new shell: %v", err)
	}
	waitScreen(first, "$")
	// Typed text arrives as an input event (chromium's key events reach
	// xterm.js twice, as keydown and keypress); Enter as a key.
	if err := chromedp.Do(first, chromedp.Focus(`#term textarea`)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(first, input.InsertText, input.InsertTextParams{Text: "echo typed-in-$((6*7))"}); err != nil {
		t.Fatalf("type: %v", err)
	}
	if err := chromedp.Do(first, chromedp.SendKeys(`#term textarea`, kb.Enter)); err != nil {
		t.Fatalf("type: %v", err)
	}
	waitScreen(first, "typed-in-42")

	// The launcher: an application session of the shown shell.
	if err := chromedp.Do(first,
		chromedp.SetValue(`#run-cmd`, `echo launched-$((6*7)); sleep 600`),
		chromedp.Click(`#run`),
		chromedp.WaitVisible(`#child .xterm`),
	); err != nil {
		t.Fatalf("launch an application: %v", err)
	}
	pane = "child"
	waitScreen(first, "launched-42")
	pane = "main"
	closeFirst() // the tab goes, the sessions run on

	uc := client.New([]string{pc.HTTPAddr(1)}, client.WithToken(u.token))
	list, err := uc.Sessions(context.Background(), false)
	if err != nil || len(list) != 2 {
		t.Fatalf("sessions %+v (%v): want the shell and the application the page started", list, err)
	}
	shell, app := list[0], list[1]
	if shell.Parent != "" {
		shell, app = app, shell
	}
	if app.Parent != shell.ID || app.Kind != "app" || app.Node != pc.ID(1) || app.Placement == nil || app.Placement.Policy != "most-free-memory" {
		t.Fatalf("the launched session is %+v (placement %+v), want kind app, parent %s, on %s (most free memory)", app, app.Placement, shell.ID, pc.ID(1))
	}
	list = []client.Session{shell}
	second, closeSecond := chromedp.NewContext(bctx)
	defer closeSecond()
	signIn(second, 1)
	if err := chromedp.Do(second, chromedp.Click(`#list button[data-id="`+list[0].ID+`"]`), chromedp.WaitVisible(`#term .xterm`)); err != nil {
		t.Fatalf("pick the session: %v", err)
	}
	waitScreen(second, "typed-in-42")

	// The application ends with the session it belongs to.
	if err := uc.KillSession(context.Background(), shell.ID); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitFor(t, 10*time.Second, "the launched application to end with its shell", func() bool {
		l, err := uc.Sessions(context.Background(), false)
		return err == nil && len(l) == 0
	})
}
