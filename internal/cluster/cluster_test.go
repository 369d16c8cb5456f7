package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/meta/metatest"
	"github.com/mure-dev/mure/internal/transport"
)

// seat is one cluster seat of an in-process test cluster: its own peer
// port on loopback, serving the cluster's peer API.
type seat struct {
	c   *Cluster
	mux *transport.Mux
	srv *http.Server
}

func (s *seat) close() {
	s.srv.Close()
	s.c.Close()
	s.mux.Close()
}

// openSeats opens len(parts) seats, the first founding the cluster; parts[i]
// are seat i's state machine parts.
func openSeats(t *testing.T, parts ...[]meta.Part) []*seat {
	t.Helper()
	return openSeatsWith(t, nil, parts...)
}

// openSeatsWith is openSeats with every seat's Config.Barrier set.
func openSeatsWith(t *testing.T, barrier func(context.Context, *meta.Result) error, parts ...[]meta.Part) []*seat {
	t.Helper()
	key, err := transport.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	var seats []*seat
	for i, p := range parts {
		mux, err := transport.Listen(transport.Config{BindAddr: "127.0.0.1:0", Key: key})
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{NodeID: fmt.Sprint("n", i+1), Dir: t.TempDir(), HTTPAddr: "127.0.0.1:1", Mux: mux, Key: key,
			Timing: FastTiming(), Parts: p, Load: func() Load { return Load{Connections: i} }, Barrier: barrier,
			Zone: fmt.Sprint("z", i%2)}
		if i == 0 {
			cfg.ClusterID, cfg.Bootstrap = "test-cluster", true
		} else {
			cfg.Join = []string{seats[0].mux.Addr()}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := Open(ctx, cfg)
		cancel()
		if err != nil {
			mux.Close()
			t.Fatalf("open seat %d: %v", i+1, err)
		}
		s := &seat{c: c, mux: mux, srv: &http.Server{Handler: c.Handler()}}
		go s.srv.Serve(mux.HTTPListener())
		seats = append(seats, s)
		t.Cleanup(s.close)
	}
	waitFor(t, "every seat a voter, with a leader", func() bool {
		for _, s := range seats {
			if id, _ := s.c.Leader(); id == "" {
				return false
			}
		}
		voters := 0
		for _, m := range seats[0].c.Members() {
			if m.Suffrage == "voter" && m.State == meta.NodeActive {
				voters++
			}
		}
		return voters == len(seats)
	})
	return seats
}

// waitFor polls cond for up to 15 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func leaderOf(t *testing.T, seats []*seat) int {
	t.Helper()
	for i, s := range seats {
		if s != nil && s.c.IsLeader() {
			return i
		}
	}
	return -1
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Three seats over loopback: a command applied through a follower is
// forwarded and seen by every seat; when the leader stops, another is
// elected, applies go on, and the followers hold read leases again.
func TestClusterApplyAndLeaderChange(t *testing.T) {
	seats := openSeats(t, nil, nil, nil)
	lead := leaderOf(t, seats)
	if lead < 0 {
		t.Fatal("no leader")
	}
	// Every seat learns every other's zone from gossip (n1 and n3 in z0,
	// n2 in z1), in Members and in Locality.
	for _, s := range seats {
		waitFor(t, s.c.NodeID()+" sees every zone", func() bool {
			for i, m := range s.c.Members() {
				if want := fmt.Sprint("z", i%2); m.Zone != want {
					return false
				}
				if z, _ := s.c.Locality(m.ID); z != fmt.Sprint("z", i%2) {
					return false
				}
			}
			return true
		})
		// and has measured its round trip to every other by gossip's
		// probes (the read order's nearness key, decision 0041)
		waitFor(t, s.c.NodeID()+" measures the round trip to every other", func() bool {
			for _, m := range s.c.Members() {
				self := m.ID == s.c.NodeID()
				if rtt := s.c.RTT(m.ID); self != (rtt == 0) || self != (m.RTTMillis == 0) || rtt > time.Second {
					return false
				}
			}
			return true
		})
	}
	follower := seats[(lead+1)%3]
	set := func(s *seat, v string) {
		t.Helper()
		res, err := s.c.Apply(ctxT(t), meta.Command{Kind: meta.KindSetConfig, Key: meta.CfgReplication, Value: v})
		if err != nil || res.Err != nil {
			t.Fatalf("set replication=%s through %s: %v %v", v, s.c.NodeID(), err, res)
		}
	}
	set(follower, "2")
	for _, s := range seats {
		waitFor(t, s.c.NodeID()+" applies the setting", func() bool {
			var r int
			s.c.FSM().Read(func(st *meta.State) { r = meta.ParseConfig(st.Config()).Replicas })
			return r == 2
		})
	}
	waitFor(t, "the followers hold read leases", func() bool {
		for _, s := range seats {
			if !s.c.HasReadLease() {
				return false
			}
		}
		return true
	})

	seats[lead].close()
	rest := []*seat{}
	for i, s := range seats {
		if i != lead {
			rest = append(rest, s)
		}
	}
	waitFor(t, "a new leader", func() bool {
		id, _ := rest[0].c.Leader()
		return id != "" && id != seats[lead].c.NodeID()
	})
	set(rest[0], "1")
	set(rest[1], "3")
	waitFor(t, "the survivors hold read leases from the new leader", func() bool {
		return rest[0].c.HasReadLease() && rest[1].c.HasReadLease()
	})
}

// A namespace version that a voter does not apply is refused by the
// leader, naming the voter, and nothing is committed; one every voter
// applies goes through on every seat.
func TestClusterRefusesUnsupportedNamespace(t *testing.T) {
	seats := openSeats(t,
		[]meta.Part{metatest.New(2)},
		[]meta.Part{metatest.New(2)},
		[]meta.Part{metatest.New(1)}, // an older binary
	)
	waitFor(t, "every seat's support gossiped to the others", func() bool {
		for _, s := range seats {
			if len(s.c.Supports()) != 3 {
				return false
			}
		}
		return true
	})
	for i, s := range seats {
		res, err := s.c.ApplyOp(ctxT(t), metatest.AddOp("hits", 1))
		if err != nil || res.Err != nil {
			t.Fatalf("add through %s: %v %v", s.c.NodeID(), err, res)
		}
		// The part's answer crosses the wire from the leader as it is.
		if want := fmt.Sprint(i + 1); string(res.Data) != want {
			t.Fatalf("add through %s answered %q, want %s", s.c.NodeID(), res.Data, want)
		}
	}
	for _, s := range seats {
		res, err := s.c.ApplyOp(ctxT(t), metatest.ResetOp())
		if err == nil {
			t.Fatalf("reset (v2) through %s committed: %+v", s.c.NodeID(), res)
		}
		if !strings.Contains(err.Error(), "n3 (v1)") || !strings.Contains(err.Error(), "counter v2") {
			t.Fatalf("reset through %s: %v; want a refusal naming n3 and counter v2", s.c.NodeID(), err)
		}
		if !errors.Is(err, meta.ErrUnsupported) || !errors.Is(err, ErrRefused) {
			t.Fatalf("through %s: %v is not ErrUnsupported and ErrRefused", s.c.NodeID(), err)
		}
	}
	for _, s := range seats {
		waitFor(t, s.c.NodeID()+" counts 3 hits", func() bool {
			var v int64
			s.c.FSM().ReadPart(metatest.NS, func(p meta.Part) { v = p.(*metatest.Counter).Value("hits") })
			return v == 3
		})
	}
	// A setting introduced by a namespace version the old voter lacks is
	// refused the same way.
	if _, ok := meta.LookupSetting("counter.test"); !ok {
		meta.RegisterSetting(meta.Setting{Key: "counter.test", Default: "a", Validate: func(string) error { return nil }, Namespace: metatest.NS, Version: 2})
	}
	_, err := seats[0].c.Apply(ctxT(t), meta.Command{Kind: meta.KindSetConfig, Key: "counter.test", Value: "b"})
	if err == nil || !strings.Contains(err.Error(), "n3 (v1)") {
		t.Fatalf("a setting of counter v2: %v; want a refusal naming n3", err)
	}
}
