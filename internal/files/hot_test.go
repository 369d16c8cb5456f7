package files

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/meta"
)

// hotCluster is a fake cluster of a, b and c with one copy per file,
// durability local, and the files named written on a and released.
func hotCluster(t *testing.T, paths ...string) *fakeCluster {
	c := newFakeCluster(t, "a", "b", "c")
	for k, v := range map[string]string{meta.CfgReplication: "1", meta.CfgDurability: "local"} {
		c.apply(meta.Command{Kind: meta.KindSetConfig, Key: k, Value: v})
	}
	for _, p := range paths {
		if _, err := c.put("a", p, "content of "+p, PutOptions{}); err != nil {
			t.Fatal(err)
		}
		f := c.fsms["a"].File(p)
		if r := c.apply(meta.Command{Kind: meta.KindRelease, Path: p, Node: "a", Grant: f.Grant, Version: f.Version}); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	return c
}

// hotCfg is the settings of these tests: hot above 5 reads per second,
// cold after 1.5 s below 2.5, at most max copies per node.
func hotCfg(max int) meta.Config {
	return meta.Config{Replicas: 1, HotReads: 5, HotWindow: time.Second, HotCool: 1500 * time.Millisecond, HotMax: max}
}

func wanted(s *Service) []string {
	s.hot.mu.Lock()
	defer s.hot.mu.Unlock()
	var out []string
	for p := range s.hot.wanted {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestHotRoundWants: which files a node wants a hot copy of after one
// window of reads.
func TestHotRoundWants(t *testing.T) {
	tests := []struct {
		name   string
		node   string
		counts map[string]int
		peers  map[string]int // what other nodes gossip of x, reads per second
		cfg    meta.Config
		want   []string
	}{
		{"the sum over nodes without a copy, at the busiest", "b", map[string]int{"x": 4}, map[string]int{"c": 3}, hotCfg(4), []string{"x"}},
		{"a busier node elsewhere takes it", "b", map[string]int{"x": 4}, map[string]int{"c": 6}, hotCfg(4), nil},
		{"as busy: the lower node ID takes it", "b", map[string]int{"x": 4}, map[string]int{"c": 4}, hotCfg(4), []string{"x"}},
		{"as busy, higher node ID", "c", map[string]int{"x": 4}, map[string]int{"b": 4}, hotCfg(4), nil},
		{"a holder's reads are not counted", "b", map[string]int{"x": 3}, map[string]int{"a": 6}, hotCfg(4), nil},
		{"above the threshold", "b", map[string]int{"x": 6}, nil, hotCfg(4), []string{"x"}},
		{"at the threshold: not hot", "b", map[string]int{"x": 5}, nil, hotCfg(4), nil},
		{"the budget takes the hottest", "b", map[string]int{"x": 10, "y": 30, "z": 20}, nil, hotCfg(2), []string{"y", "z"}},
		{"a valid copy here already", "a", map[string]int{"x": 50}, nil, hotCfg(4), nil},
		{"no such file", "b", map[string]int{"nope": 50}, nil, hotCfg(4), nil},
		{"replication all: off", "b", map[string]int{"x": 50}, nil, meta.Config{HotReads: 5, HotWindow: time.Second, HotCool: time.Second, HotMax: 4}, nil},
		{"hot.reads 0: off", "b", map[string]int{"x": 50}, nil, meta.Config{Replicas: 1, HotWindow: time.Second, HotCool: time.Second, HotMax: 4}, nil},
	}
	c := hotCluster(t, "x", "y", "z")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := c.svcs[tc.node]
			s.hot = newHot()
			c.hotReads = map[string][]cluster.HotRead{}
			for id, r := range tc.peers {
				c.hotReads[id] = []cluster.HotRead{{Key: hotKey("y"), PerSecond: 100}, {Key: hotKey("x"), PerSecond: r}}
			}
			s.hotRound(context.Background(), tc.cfg, tc.counts, time.Second)
			if got := wanted(s); !slices.Equal(got, tc.want) {
				t.Fatalf("wanted %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("gossips its busiest files read elsewhere", func(t *testing.T) {
		b := c.svcs["b"]
		b.hot = newHot()
		b.hotRound(context.Background(), hotCfg(4), map[string]int{"x": 10, "y": 30, "z": 20, "w": 5, "nope": 1}, 2*time.Second)
		want := []cluster.HotRead{{Key: hotKey("y"), PerSecond: 15}, {Key: hotKey("z"), PerSecond: 10}, {Key: hotKey("x"), PerSecond: 5}}
		if got := c.hotReads["b"]; !slices.Equal(got, want) {
			t.Fatalf("gossiped %v, want %v", got, want)
		}
		a := c.svcs["a"] // holds them all: nothing to gossip
		a.hotRound(context.Background(), hotCfg(4), map[string]int{"x": 10}, time.Second)
		if got := c.hotReads["a"]; len(got) != 0 {
			t.Fatalf("the holder gossiped %v", got)
		}
	})
}

// TestHotRoundCools: a wanted file whose copy is valid here is dropped
// once read below half the threshold for hot.cool, not before; it is kept
// (and served, no longer counted as hot) when it is the file's only copy
// (meta.ErrKeep) or when a voter predates conditional drops (core v4).
func TestHotRoundCools(t *testing.T) {
	for _, tc := range []struct {
		name      string
		only      bool // a's copy is dropped first: b's is the only one
		noV4      bool
		wantValid []string
	}{
		{"extra copy dropped", false, false, []string{"a"}},
		{"only copy kept", true, false, []string{"b"}},
		{"a voter without core v4: kept", false, true, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hotCluster(t, "x")
			c.noV4 = tc.noV4
			b := c.svcs["b"]
			ctx := context.Background()
			b.hotRound(ctx, hotCfg(4), map[string]int{"x": 10}, time.Second)
			f := c.fsms["b"].File("x")
			if err := b.resumeReplica(ctx, f, "a", nil); err != nil {
				t.Fatal(err)
			}
			if b.hot.added.Load() != 1 {
				t.Fatalf("%d hot copies added, want 1", b.hot.added.Load())
			}
			if tc.only {
				c.apply(meta.Command{Kind: meta.KindDrop, Path: "x", Version: f.Version, Node: "a"})
			}
			b.hotRound(ctx, hotCfg(4), map[string]int{"x": 3}, time.Second) // still warm
			b.hotRound(ctx, hotCfg(4), map[string]int{"x": 2}, time.Second) // cool for 1 s
			if got := c.fsms["b"].File("x").Valid; !slices.Contains(got, "b") || len(wanted(b)) != 1 {
				t.Fatalf("cool for 1 s of 1.5: valid %v, wanted %v; want b's copy kept", got, wanted(b))
			}
			b.hotRound(ctx, hotCfg(4), map[string]int{}, time.Second) // cool for 2 s
			got := c.fsms["b"].File("x").Valid
			if len(wanted(b)) != 0 || b.hot.isRetiring("x") {
				t.Fatalf("after cooling: wanted %v, retiring %v", wanted(b), b.hot.isRetiring("x"))
			}
			wantDropped := uint64(0)
			if !slices.Contains(tc.wantValid, "b") {
				wantDropped = 1
			}
			if !slices.Equal(got, tc.wantValid) || b.hot.dropped.Load() != wantDropped {
				t.Fatalf("valid %v, %d dropped; want valid %v, %d dropped", got, b.hot.dropped.Load(), tc.wantValid, wantDropped)
			}
			if _, err := b.st.Stat("x", f.BlobID); (err == nil) != (wantDropped == 0) {
				t.Fatalf("b's blob after cooling: %v; want it gone only when dropped", err)
			}
		})
	}
}

// TestHotRoundReplicationAll: once every node must keep a copy, the hot
// copies are configured ones: forgotten, not dropped.
func TestHotRoundReplicationAll(t *testing.T) {
	c := hotCluster(t, "x")
	b := c.svcs["b"]
	ctx := context.Background()
	b.hotRound(ctx, hotCfg(4), map[string]int{"x": 10}, time.Second)
	if err := b.resumeReplica(ctx, c.fsms["b"].File("x"), "a", nil); err != nil {
		t.Fatal(err)
	}
	all := hotCfg(4)
	all.Replicas = 0
	b.hotRound(ctx, all, map[string]int{}, time.Second)
	if got := c.fsms["b"].File("x").Valid; !slices.Equal(got, []string{"a", "b"}) || len(wanted(b)) != 0 || b.hot.dropped.Load() != 0 {
		t.Fatalf("valid %v, wanted %v, %d dropped; want b's copy kept and forgotten", got, wanted(b), b.hot.dropped.Load())
	}
}

// BenchmarkHotRead is the cost a read pays for the hot-file counts, from
// every core at once: off (replication all), and on for a file counted
// elsewhere (the path already in the window's map) and for a local read
// of a file not wanted (one atomic load).
func BenchmarkHotRead(b *testing.B) {
	for _, tc := range []struct {
		name    string
		enabled bool
		local   bool
	}{{"off", false, false}, {"counted", true, false}, {"local, not wanted", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			h := newHot()
			h.enabled.Store(tc.enabled)
			h.read("photos/a.jpg", false)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					h.read("photos/a.jpg", tc.local)
				}
			})
		})
	}
}
