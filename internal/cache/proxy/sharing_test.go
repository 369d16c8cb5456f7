package proxy

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/cache/tier"
	"github.com/mure-dev/mure/internal/service"
)

func TestRendezvousMovesAFewKeys(t *testing.T) {
	peers := func(n int) []Peer {
		var out []Peer
		for i := range n {
			out = append(out, Peer{ID: fmt.Sprintf("node%d", i)})
		}
		return out
	}
	const keys = 20000
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d to %d nodes", n, n+1), func(t *testing.T) {
			before, after := peers(n), peers(n+1)
			moved, count := 0, map[string]int{}
			for i := range keys {
				k := fmt.Sprintf("_ /object/%d", i)
				a, b := Rendezvous(k, before), Rendezvous(k, after)
				count[a.ID]++
				if a != b {
					moved++
					if b.ID != after[n].ID {
						t.Fatalf("key %s moved between old nodes (%s → %s)", k, a.ID, b.ID)
					}
				}
			}
			want := keys / (n + 1)
			if moved < want*8/10 || moved > want*12/10 {
				t.Errorf("%d keys moved, want about %d (1/%d)", moved, want, n+1)
			}
			for id, c := range count {
				if c < keys/n*8/10 || c > keys/n*12/10 {
					t.Errorf("%s owns %d keys of %d, want about %d", id, c, keys, keys/n)
				}
			}
		})
	}
}

// fixedRing owns every key on one peer.
type fixedRing struct {
	self, owner Peer
	others      []Peer
}

func (r fixedRing) Owner(string) (Peer, bool) { return r.owner, r.owner == r.self }
func (r fixedRing) Others() []Peer            { return r.others }

// TestRelayThroughOwner: two proxies, the second owning every key; a miss
// on the first is fetched through the second, so the origin sees one
// fetch for both, and a POST through the first removes the owner's copy.
func TestRelayThroughOwner(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "from origin "+r.Method)
	})
	u, _ := url.Parse(o.URL)
	var peerSrv [2]*httptest.Server
	var handlers [2]*Handler
	peerMux := [2]*http.ServeMux{http.NewServeMux(), http.NewServeMux()}
	for i := range 2 {
		peerSrv[i] = httptest.NewServer(peerMux[i])
		t.Cleanup(peerSrv[i].Close)
	}
	addr := func(i int) string { return strings.TrimPrefix(peerSrv[i].URL, "http://") }
	self := [2]Peer{{"a", addr(0)}, {"b", addr(1)}}
	var front [2]*httptest.Server
	for i := range 2 {
		tiers, err := tier.Open(tier.Config{Dir: t.TempDir(), NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		ring := fixedRing{self: self[i], owner: self[1], others: []Peer{self[1-i]}}
		h, err := NewHandler(Config{Origins: []Origin{{URL: u}}, Sharing: &Sharing{Ring: ring, Client: func() *http.Client { return http.DefaultClient }}},
			tiers, service.Env{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		peerMux[i].HandleFunc("GET "+peerFetchRoute, h.ServePeerFetch)
		peerMux[i].HandleFunc("POST "+peerRemoveRoute, h.ServePeerRemove)
		handlers[i] = h
		front[i] = httptest.NewServer(h)
		t.Cleanup(func() { front[i].Close(); h.Close(); tiers.Close() })
	}
	resp, body := fetch(t, "GET", front[0].URL+"/x")
	if body != "from origin GET" || !strings.Contains(resp.Header.Get("Cache-Status"), "detail=owner-b") {
		t.Fatalf("relayed miss: %q %q", body, resp.Header.Get("Cache-Status"))
	}
	resp, body = fetch(t, "GET", front[1].URL+"/x")
	if body != "from origin GET" || !strings.HasPrefix(resp.Header.Get("Cache-Status"), "mure; hit") {
		t.Fatalf("owner's own request: %q %q", body, resp.Header.Get("Cache-Status"))
	}
	if n := o.hits.Load(); n != 1 {
		t.Fatalf("origin saw %d fetches, want 1", n)
	}
	if st := handlers[0].tiers.Stats(); st.Objects != 0 {
		t.Errorf("the non-owner stored a copy: %+v", st)
	}
	fetch(t, "POST", front[0].URL+"/x")
	handlers[0].bg.Wait()
	if st := handlers[1].tiers.Stats(); st.Objects != 0 {
		t.Errorf("the owner kept an object a POST invalidated: %+v", st)
	}
}

// TestOwnerUnreachableServesAlone: the ring names an owner that does not
// answer (down, or running no proxy): the node serves on its own.
func TestOwnerUnreachableServesAlone(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "alone")
	})
	noProxy := httptest.NewServer(http.NotFoundHandler()) // a node without --proxy
	t.Cleanup(noProxy.Close)
	dead := Peer{"dead", "127.0.0.1:1"}
	for _, owner := range []Peer{dead, {"bare", strings.TrimPrefix(noProxy.URL, "http://")}} {
		t.Run(owner.ID, func(t *testing.T) {
			u, _ := url.Parse(o.URL)
			tiers, err := tier.Open(tier.Config{Dir: t.TempDir(), NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			ring := fixedRing{self: Peer{"me", "127.0.0.1:2"}, owner: owner}
			h, err := NewHandler(Config{Origins: []Origin{{URL: u}}, Sharing: &Sharing{Ring: ring, Client: func() *http.Client { return http.DefaultClient }}},
				tiers, service.Env{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			t.Cleanup(func() { srv.Close(); h.Close(); tiers.Close() })
			resp, body := fetch(t, "GET", srv.URL+"/a")
			if body != "alone" || strings.Contains(resp.Header.Get("Cache-Status"), "owner-") {
				t.Errorf("%d %q %q", resp.StatusCode, body, resp.Header.Get("Cache-Status"))
			}
		})
	}
}

// TestSilentOwnerServesAlone: an owner that accepts the connection but
// never answers holds the client no longer than the header timeout.
func TestSilentOwnerServesAlone(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "alone")
	})
	silent := make(chan struct{})
	mute := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-silent }))
	t.Cleanup(mute.Close)
	t.Cleanup(func() { close(silent) }) // before mute.Close, which waits for its handler
	u, _ := url.Parse(o.URL)
	tiers, err := tier.Open(tier.Config{Dir: t.TempDir(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ring := fixedRing{self: Peer{"me", "127.0.0.1:2"}, owner: Peer{"mute", strings.TrimPrefix(mute.URL, "http://")}}
	h, err := NewHandler(Config{Origins: []Origin{{URL: u}}, Limits: Limits{HeaderTimeout: 200 * time.Millisecond},
		Sharing: &Sharing{Ring: ring, Client: func() *http.Client { return http.DefaultClient }}},
		tiers, service.Env{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close(); tiers.Close() })
	start := time.Now()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(srv.URL + "/a")
	if err != nil {
		t.Fatalf("a silent owner held the client: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "alone" || resp.StatusCode != 200 {
		t.Errorf("%d %q", resp.StatusCode, b)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a silent owner held the client %v", d)
	}
}
