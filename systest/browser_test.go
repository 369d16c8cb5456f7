package systest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/cache/proxy"
	"github.com/mure-dev/mure/internal/history"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// browser starts a headless chromium (Debian's, installed by
// scripts/test.sh) for the test, or skips when there is none.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no chromium to drive (Debian: apt-get install chromium; scripts/test.sh installs it)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 1100), chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 120*time.Second)
	t.Cleanup(func() { cancelTime(); cancel(); cancelAlloc() })
	return ctx
}

// TestDashboardInBrowser drives chromium against 3 nodes under load: log
// in with a read-only user's password, see every member, see charts gain
// points, kill a node and see it marked down while its past stays drawn.
// MURE_SCREENSHOT=FILE saves the dashboard (docs/img/dashboard.png).
func TestDashboardInBrowser(t *testing.T) {
	ctx := browser(t)
	// Node 1 runs the caching proxy (the page, from node 0, draws its panel).
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		fmt.Fprint(w, "cached object")
	}))
	defer origin.Close()
	ou, _ := neturl.Parse(origin.URL)
	proxyAddr := testcluster.FreeAddr(t)
	c := testcluster.Start(t, 3, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		if i == 1 {
			cfg.Proxy = &proxy.Config{Addr: proxyAddr, Origins: []proxy.Origin{{URL: ou}}, Probe: proxy.Probe{URL: "/probe"}}
		}
	}})
	for range 2 { // a miss, then a hit
		if resp, err := http.Get("http://" + proxyAddr + "/obj"); err == nil {
			resp.Body.Close()
		}
	}
	addr := c.HTTPAddr(0)
	mustCall(t, addr, "POST", "/auth/users", bearer(c.Token()), `{"name":"viewer","password":"viewer-pass-1","grants":["ro:"]}`, http.StatusCreated)

	stop := load(t, c, 40*time.Millisecond)
	defer stop()

	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	count := func(selector string) int {
		n, _ := strconv.Atoi(eval(`String(document.querySelectorAll('` + selector + `').length)`))
		return n
	}
	run("open / and log in",
		chromedp.Navigate("http://"+addr+"/"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SendKeys(`input[name=user]`, "viewer"),
		chromedp.SendKeys(`input[name=password]`, "viewer-pass-1"),
		chromedp.Click(`#login-form button[type=submit]`),
		chromedp.WaitVisible(`#dash`),
	)
	url, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(url, "/ui/") {
		t.Errorf("/ led the browser to %s, want /ui/", url)
	}
	rows := func() int { return count(`#members tbody tr[data-state=up]`) }
	points := func(chart string) int {
		n, _ := strconv.Atoi(eval(`(document.getElementById('chart-` + chart + `')||{dataset:{}}).dataset.points||'0'`))
		return n
	}
	testcluster.WaitFor(t, 20*time.Second, "the page to show 3 members up", func() bool { return rows() == 3 })
	testcluster.WaitFor(t, 20*time.Second, "the request chart to hold 3 seconds", func() bool { return points("requests") >= 3 })
	first := points("requests")
	testcluster.WaitFor(t, 10*time.Second, "the request chart to gain points", func() bool { return points("requests") > first })
	if drawn := count(`#charts .chart canvas`); drawn < 10 {
		t.Errorf("%d charts drawn, want one per group of figures", drawn)
	}
	// Node 1 runs the caching proxy: its panel shows, with node 1's hit.
	testcluster.WaitFor(t, 10*time.Second, "the cache panel to show node 1's hit", func() bool {
		return eval(`String(document.getElementById('cache').hidden)`) == "false" && count(`#cache-charts .chart canvas`) == 5 &&
			eval(`document.getElementById('chart-cache_requests').dataset.nodes`) == c.ID(1) &&
			strings.Contains(eval(`document.getElementById('cache-now').textContent`), c.ID(1))
	})
	// Paper 003's graph 2: the probe's two latencies, in node 1's history.
	testcluster.WaitFor(t, 10*time.Second, "node 1's probe latencies in the history", func() bool {
		d, _ := getHistory(t, c, 0, "?node="+c.ID(1))
		for _, p := range d.Nodes[c.ID(1)].Fine {
			if p.Known(history.ProbeCache) && p.Known(history.ProbeOrigin) && p.V[history.ProbeCache] > 0 {
				return true
			}
		}
		return false
	})
	// The sessions panel draws its chart; the viewer has no session.
	if count(`#session-charts .chart canvas`) != 1 || eval(`String(document.getElementById('sessions-none').hidden)`) != "false" {
		t.Errorf("%d session charts, 'no sessions' hidden %s: want one session chart, no sessions listed",
			count(`#session-charts .chart canvas`), eval(`String(document.getElementById('sessions-none').hidden)`))
	}

	if os.Getenv("MURE_SCREENSHOT") != "" { // a picture worth looking at: half a minute of load
		testcluster.WaitFor(t, 60*time.Second, "30 s of history", func() bool { return points("requests") >= 30 })
	}
	dead := c.ID(2)
	killed := time.Now()
	c.Kill(2)
	testcluster.WaitFor(t, 20*time.Second, "the page to show the killed node down", func() bool {
		return count(`#members tr[data-node="`+dead+`"][data-state=down]`) == 1
	})
	t.Logf("the dashboard showed node %s down %v after it was killed", dead, time.Since(killed).Round(100*time.Millisecond))
	nodes, legend := eval(`document.getElementById('chart-cpu').dataset.nodes`), eval(`document.getElementById('chart-cpu').textContent`)
	if !strings.Contains(nodes, dead) || !strings.Contains(legend, dead+" (down)") {
		t.Errorf("after the kill the CPU chart draws %q (legend %q): want the dead node's past, marked down", nodes, legend)
	}

	if file := os.Getenv("MURE_SCREENSHOT"); file != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot in %s", file)
	}
}

// load writes and reads small files on every live node every interval
// until stop is called.
func load(t *testing.T, c *testcluster.Cluster, every time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	clients := map[int]*client.Client{}
	for i := range c.Nodes {
		clients[i] = c.Client(i)
	}
	wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, n := range c.Running() {
				cl := clients[n]
				key := fmt.Sprintf("load/%d", i%20)
				if _, err := cl.Put(ctx, key, strings.NewReader("x"), nil); err == nil {
					if r, err := cl.Get(ctx, key, nil); err == nil {
						r.Close()
					}
				}
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}
