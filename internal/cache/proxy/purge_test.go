package proxy

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/cache/purge"
	"github.com/mure-dev/mure/internal/cache/tier"
	"github.com/mure-dev/mure/internal/service"
)

// memLog is an in-memory PurgeLog (the seam of the cluster's records).
type memLog struct {
	mu   sync.Mutex
	recs []purge.Record
}

func (l *memLog) Propose(_ context.Context, key string, prefix bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, purge.Record{Seq: uint64(len(l.recs) + 1), Key: key, Prefix: prefix, Time: time.Now()})
	return nil
}

func (l *memLog) CatchUp(context.Context) error { return nil }

func (l *memLog) Since(seq uint64) []purge.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []purge.Record
	for _, r := range l.recs {
		if r.Seq > seq {
			out = append(out, r)
		}
	}
	return out
}

func TestPurge(t *testing.T) {
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, r.URL.Path)
	})
	u, _ := url.Parse(o.URL)
	dir := t.TempDir()
	log := &memLog{}
	open := func() (*httptest.Server, *Handler, *tier.Tiers) {
		tiers, err := tier.Open(tier.Config{Dir: dir, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		h, err := NewHandler(Config{Origins: []Origin{{URL: u}}, Purges: log}, tiers, service.Env{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("POST "+purgeRoute, h.ServePurge)
		mux.Handle("/", h)
		srv := httptest.NewServer(mux)
		return srv, h, tiers
	}
	srv, h, tiers := open()
	for _, p := range []string{"/a", "/static/1", "/static/2", "/other"} {
		fetch(t, "GET", srv.URL+p)
	}
	tests := []struct {
		query   string
		status  int
		objects int
	}{
		{"", http.StatusBadRequest, 4},
		{"url=relative", http.StatusBadRequest, 4},
		{"url=" + url.QueryEscape("http://elsewhere.example/a"), http.StatusNotFound, 4},
		{"url=/a", http.StatusOK, 3},
		{"url=/static/&prefix=1", http.StatusOK, 1},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			resp, _ := fetch(t, "POST", srv.URL+purgeRoute+"?"+tc.query)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if n := tiers.Stats().Objects; n != tc.objects {
				t.Errorf("%d objects left, want %d", n, tc.objects)
			}
		})
	}
	srv.Close()
	h.Close()
	tiers.Close()
	// Stored again behind the log's back, then a purge recorded while
	// this proxy was away: it is applied when the proxy opens again.
	srv2, h2, tiers2 := open()
	fetch(t, "GET", srv2.URL+"/other")
	srv2.Close()
	h2.Close()
	tiers2.Close()
	log.Propose(context.Background(), "_ /other", false)
	srv3, h3, tiers3 := open()
	defer func() { srv3.Close(); h3.Close(); tiers3.Close() }()
	if n := tiers3.Stats().Objects; n != 0 {
		t.Errorf("%d objects after reopening past a purge, want 0", n)
	}
}
