//go:build linux

package systest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/cache/proxy"
	"github.com/mure-dev/mure/internal/history"
	"github.com/mure-dev/mure/internal/node"
	"github.com/mure-dev/mure/internal/testcluster"
)

// TestCacheOneAcrossCluster: three nodes with the caching proxy in front
// of one origin; every object is asked of every node, and the origin sees
// one fetch per object cluster-wide (each key is fetched by its owner,
// the others relay it over the peer port).
func TestCacheOneAcrossCluster(t *testing.T) {
	var hits atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "object "+r.URL.Path)
	}))
	defer origin.Close()
	u, _ := url.Parse(origin.URL)
	addrs := make([]string, 3)
	testcluster.Start(t, 3, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		addrs[i] = testcluster.FreeAddr(t)
		cfg.Proxy = &proxy.Config{Addr: addrs[i], Origins: []proxy.Origin{{URL: u}}}
	}})
	const objects = 12
	owners := map[string]bool{}
	for k := range objects {
		for i := range 3 {
			resp, err := http.Get(fmt.Sprintf("http://%s/obj/%d", addrs[i], k))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != fmt.Sprintf("object /obj/%d", k) {
				t.Fatalf("node %d, object %d: %d %q", i, k, resp.StatusCode, b)
			}
			st := resp.Header.Get("Cache-Status")
			if j := strings.Index(st, "detail=owner-"); j >= 0 {
				owners[st[j+len("detail=owner-"):]] = true
			}
		}
	}
	if got := hits.Load(); got != objects {
		t.Errorf("the origin saw %d fetches for %d objects asked of 3 nodes, want %d", got, objects, objects)
	}
	if len(owners) < 2 {
		t.Errorf("relays went to %d owners, want the keys spread over the nodes", len(owners))
	}
}

// TestCachePurgeReachesNodeThatWasDown: the owner of an object is down
// when it is purged; when it returns, it does not serve the object from
// its disk tier (the purge is in the replicated state).
func TestCachePurgeReachesNodeThatWasDown(t *testing.T) {
	var hits atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "object "+r.URL.Path)
	}))
	defer origin.Close()
	u, _ := url.Parse(origin.URL)
	addrs := make([]string, 3)
	c := testcluster.Start(t, 3, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		addrs[i] = testcluster.FreeAddr(t)
		cfg.Proxy = &proxy.Config{Addr: addrs[i], Origins: []proxy.Origin{{URL: u}}}
	}})
	get := func(i int) string {
		resp, err := http.Get("http://" + addrs[i] + "/doomed")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get("Cache-Status")
	}
	// Find the owner: the node whose answer is its own (no relay).
	owner := -1
	for i := range 3 {
		if st := get(i); !strings.Contains(st, "detail=owner-") {
			owner = i
		}
	}
	if owner < 0 || hits.Load() != 1 {
		t.Fatalf("owner %d, %d origin fetches", owner, hits.Load())
	}
	other := (owner + 1) % 3
	c.Stop(owner)
	res, err := c.Client(other).PurgeCache(context.Background(), "/doomed", false)
	if err != nil || !res.Recorded || res.Key != "_ /doomed" {
		t.Fatalf("purge: %+v %v", res, err)
	}
	c.Restart(owner)
	before := hits.Load()
	if st := get(owner); strings.Contains(st, "hit") {
		t.Fatalf("the returning owner served a purged object from its disk: %q", st)
	}
	if hits.Load() != before+1 {
		t.Errorf("origin fetches %d → %d, want one more", before, hits.Load())
	}
}

// TestCacheRestartKeepsDiskTier: a node stopped and started again answers
// from the objects its disk tier kept.
func TestCacheRestartKeepsDiskTier(t *testing.T) {
	var hits atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "kept "+r.URL.Path)
	}))
	defer origin.Close()
	u, _ := url.Parse(origin.URL)
	addr := testcluster.FreeAddr(t)
	c := testcluster.Start(t, 1, testcluster.Options{Setup: func(i int, cfg *node.Config) {
		cfg.Proxy = &proxy.Config{Addr: addr, Origins: []proxy.Origin{{URL: u}}}
	}})
	get := func() (string, string) {
		resp, err := http.Get("http://" + addr + "/k")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b), resp.Header.Get("Cache-Status")
	}
	get()
	c.Restart(0)
	// A starting node serves what it stored before once it has caught up
	// with the cluster's purges.
	testcluster.WaitFor(t, 10*time.Second, "the restarted proxy to catch up with the purge log", func() bool {
		a := call(t, c.HTTPAddr(0), "GET", "/status", bearer(c.Token()), "")
		svc, _ := a.body["services"].(map[string]any)
		p, _ := svc["proxy"].(map[string]any)
		return p["purges_current"] == true
	})
	body, st := get()
	if body != "kept /k" || !strings.HasPrefix(st, "mure; hit") || hits.Load() != 1 {
		t.Errorf("after a restart: %q %q, %d origin fetches", body, st, hits.Load())
	}
	get() // now from the memory tier, where the first read put it

	// The dashboard's cache panel: the history has the hits, the bytes
	// from each tier and the hit ratio; the view has the proxy's counts.
	seen := map[int]bool{}
	testcluster.WaitFor(t, 10*time.Second, "the history to record the hits from disk and from memory", func() bool {
		d, _ := getHistory(t, c, 0, "")
		for _, p := range d.Nodes[c.ID(0)].Fine {
			for _, f := range []int{history.CacheHit, history.CacheDisk, history.CacheMem, history.CacheHitRatio} {
				if p.Known(f) && p.V[f] > 0 {
					seen[f] = true
				}
			}
		}
		return len(seen) == 4
	})
	var v struct {
		Extra struct {
			Cache proxy.Status `json:"cache"`
		} `json:"extra"`
	}
	testcluster.WaitFor(t, 5*time.Second, "the dashboard's view to show the proxy's 2 hits and 1 object", func() bool {
		_, ok := uiGet(t, c.HTTPAddr(0), c.Token(), "/ui/api/view", &v) // the token: once the restarted node has applied its log
		return ok && v.Extra.Cache.Counts.Requests["hit"] == 2 && v.Extra.Cache.Tiers.Objects == 1
	})
}
