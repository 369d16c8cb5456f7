//go:build linux

package systest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestSessionInBrowser drives the browser terminal (xterm.js at /term/)
// in chromium: sign in with a password on node 0, start a shell, type,
// close the page; open node 1's address, sign in, pick the session, and
// see the earlier output on its screen.
func TestSessionInBrowser(t *testing.T) {
	needSessions(t)
	bctx := browser(t)
	pc := testcluster.StartProc(t, 2)
	t.Cleanup(func() { killHolders(pc, 2) })
	u := addSessionUser(t, pc.Client(0))
	const password = "browser-pass-1"
	if _, err := pc.Client(0).SetUser(context.Background(), u.name, client.UserChange{Password: ptr(password)}); err != nil {
		t.Fatal(err)
	}
	screen := func(ctx context.Context) string {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.mureScreen ? window.mureScreen() : ""`))
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
	closeFirst() // the tab goes, the session runs on

	list, err := client.New([]string{pc.HTTPAddr(1)}, client.WithToken(u.token)).Sessions(context.Background(), false)
	if err != nil || len(list) != 1 {
		t.Fatalf("sessions %+v (%v): want the one the page started", list, err)
	}
	second, closeSecond := chromedp.NewContext(bctx)
	defer closeSecond()
	signIn(second, 1)
	if err := chromedp.Do(second, chromedp.Click(`#list button[data-id="`+list[0].ID+`"]`), chromedp.WaitVisible(`#term .xterm`)); err != nil {
		t.Fatalf("pick the session: %v", err)
	}
	waitScreen(second, "typed-in-42")
}
