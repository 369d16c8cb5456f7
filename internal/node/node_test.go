package node

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/service"
)

// recorder is a Service that notes its starts and stops in a shared log.
type recorder struct {
	name              string
	log               *[]string
	startErr, stopErr error
}

func (r *recorder) Name() string { return r.name }
func (r *recorder) Start(_ context.Context, env service.Env) error {
	*r.log = append(*r.log, "start "+r.name)
	return r.startErr
}
func (r *recorder) Stop(context.Context) error {
	*r.log = append(*r.log, "stop "+r.name)
	return r.stopErr
}
func (r *recorder) Status() any { return r.name }

func TestServicesOrder(t *testing.T) {
	boom, bang := errors.New("boom"), errors.New("bang")
	tests := []struct {
		name     string
		svcs     func(log *[]string) []Service
		startErr error
		log      []string // starts, then the stops of a later stop()
		stopErrs []error
	}{
		{"start in order, stop in reverse", func(l *[]string) []Service {
			return []Service{&recorder{name: "a", log: l}, &recorder{name: "b", log: l}, &recorder{name: "c", log: l}}
		}, nil, []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}, nil},
		{"a failed start unwinds what started", func(l *[]string) []Service {
			return []Service{&recorder{name: "a", log: l}, &recorder{name: "b", log: l, startErr: boom}, &recorder{name: "c", log: l}}
		}, boom, []string{"start a", "start b", "stop a"}, nil},
		{"every stop runs and their errors are joined", func(l *[]string) []Service {
			return []Service{&recorder{name: "a", log: l, stopErr: bang}, &recorder{name: "b", log: l}, &recorder{name: "c", log: l, stopErr: boom}}
		}, nil, []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}, []error{boom, bang}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			var s services
			env := service.Env{Logger: slog.New(slog.DiscardHandler)}
			err := s.start(context.Background(), env, tc.svcs(&log)...)
			if !errors.Is(err, tc.startErr) || (err == nil) != (tc.startErr == nil) {
				t.Fatalf("start: %v, want %v", err, tc.startErr)
			}
			if err != nil && !strings.Contains(err.Error(), "start b") {
				t.Fatalf("start error %q does not name the service", err)
			}
			stopErr := s.stop(context.Background())
			for _, want := range tc.stopErrs {
				if !errors.Is(stopErr, want) {
					t.Fatalf("stop: %v, want it to hold %v", stopErr, want)
				}
			}
			if len(tc.stopErrs) == 0 && stopErr != nil {
				t.Fatalf("stop: %v", stopErr)
			}
			if !slices.Equal(log, tc.log) {
				t.Fatalf("log %v, want %v", log, tc.log)
			}
			if len(s.list()) != 0 {
				t.Fatalf("still running after stop: %v", s.list())
			}
		})
	}
}

func testConfig(t *testing.T) Config {
	return Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", NoSync: true, Timing: cluster.FastTiming()}
}

// A single node opens with its services in order, answers, and closes
// without error; the data directory opens again.
func TestOpenClose(t *testing.T) {
	cfg := testConfig(t)
	cfg.Front = &frontdoor.Config{Addr: "127.0.0.1:0", Mode: frontdoor.ModeRedirect}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"files", "apps", "sessions", "api", "monitor", "frontdoor"}
	if got := n.serviceNames(); !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}
	resp, err := http.Get("http://" + n.HTTPAddr() + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	st := n.Status()
	var door frontdoor.Status
	if ok, err := st.Service("frontdoor", &door); !ok || err != nil || door.Mode != frontdoor.ModeRedirect {
		t.Fatalf("frontdoor status %+v, %v, %v", door, ok, err)
	}
	if !slices.Equal(st.ServiceNames, want) {
		t.Fatalf("status lists %v", st.ServiceNames)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := http.Get("http://" + n.HTTPAddr() + "/healthz"); err == nil {
		t.Fatal("the client API still answers after Close")
	}
	n2, err := Open(ctx, Config{DataDir: cfg.DataDir, HTTPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", NoSync: true, Timing: cluster.FastTiming()})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if n2.ID() != n.ID() {
		t.Fatalf("reopened as %s, was %s", n2.ID(), n.ID())
	}
	if err := n2.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// A service's bad configuration (apps: a CGI directory that does not
// exist) fails Open before any port opens or the cluster is joined.
func TestOpenChecksConfigFirst(t *testing.T) {
	cfg := testConfig(t)
	cfg.CGIDir = "/nonexistent/cgi"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Open(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "--cgi-dir /nonexistent/cgi does not exist") {
		t.Fatalf("Open: %v; want the apps' configuration error", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "raft")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the cluster seat was opened before the configuration was checked: %v", err)
	}
}

// A zone label gossip cannot carry is refused before anything starts,
// with the flag's name and the rule.
func TestOpenRefusesBadZone(t *testing.T) {
	cfg := testConfig(t)
	cfg.Zone = "rack 1"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Open(ctx, cfg)
	if !errors.Is(err, cluster.ErrBadZone) || !strings.Contains(err.Error(), "--zone") {
		t.Fatalf("Open with zone %q: %v; want --zone's ErrBadZone", cfg.Zone, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "raft")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the cluster seat was opened before the configuration was checked: %v", err)
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// A service that fails to start fails Open with its name, and everything
// started before it is stopped: the services in reverse, the client port,
// the cluster seat, the store. The same data directory and port open again
// at once.
func TestOpenUnwindsFailedStart(t *testing.T) {
	var log []string
	cfg := testConfig(t)
	cfg.HTTPAddr = freeAddr(t)
	cfg.Extra = []Service{&recorder{name: "fine", log: &log}, &recorder{name: "broken", log: &log, startErr: errors.New("boom")}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Open(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "start broken: boom") {
		t.Fatalf("Open: %v; want the broken service's start error", err)
	}
	if want := []string{"start fine", "start broken", "stop fine"}; !slices.Equal(log, want) {
		t.Fatalf("services: %v, want %v", log, want)
	}
	if _, err := http.Get("http://" + cfg.HTTPAddr + "/healthz"); err == nil {
		t.Fatal("the client API still answers after the failed Open")
	}
	cfg.Extra = nil
	n, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("reopen after the failed start: %v", err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// Close returns the services' stop errors, each naming its service.
func TestCloseReturnsStopErrors(t *testing.T) {
	var log []string
	cfg := testConfig(t)
	cfg.Extra = []Service{&recorder{name: "leaky", log: &log, stopErr: errors.New("still busy")}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := n.serviceNames(); !slices.Equal(got, []string{"files", "apps", "sessions", "api", "monitor", "leaky"}) {
		t.Fatalf("services %v", got)
	}
	if err := n.Close(ctx); err == nil || !strings.Contains(err.Error(), "stop leaky: still busy") {
		t.Fatalf("Close: %v; want the stop error", err)
	}
}

// A secret file is written with its mode even over a leftover temporary
// file that is readable by others.
func TestWriteFileAtomicMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), AdminTokenFile)
	if err := os.WriteFile(path+".tmp", []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(path, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
}

// userEcho is a Service whose route answers the X-Mure-User it receives.
type userEcho struct{}

func (userEcho) Name() string { return "echo" }
func (userEcho) Start(_ context.Context, env service.Env) error {
	env.Routes.HandleFunc("GET /echo-user", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Header.Get("X-Mure-User"))
	})
	return nil
}
func (userEcho) Stop(context.Context) error { return nil }
func (userEcho) Status() any                { return nil }

// X-Mure-User reaches what is behind the client API only as the node sets
// it: a client's own is dropped, with authentication on or off.
func TestUserHeaderNotForged(t *testing.T) {
	for _, open := range []bool{false, true} {
		cfg := testConfig(t)
		cfg.Auth.Open, cfg.Extra = open, []Service{userEcho{}}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		n, err := Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := os.ReadFile(n.AdminTokenPath())
		if open {
			tok, err = nil, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", "http://"+n.HTTPAddr()+"/echo-user", nil)
		req.Header.Set("X-Mure-User", "forged")
		if len(tok) > 0 {
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := map[bool]string{false: AdminUser, true: ""}[open]
		if resp.StatusCode != http.StatusOK || string(b) != want {
			t.Errorf("auth open %v: %d %q, want %q", open, resp.StatusCode, b, want)
		}
		if err := n.Close(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
}
