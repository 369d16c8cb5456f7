//go:build linux

package systest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mure-dev/mure/internal/cache/proxy"
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
