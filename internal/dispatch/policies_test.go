package dispatch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// up is an alive node with the given connections, CPU and free memory.
func up(id string, conns int, cpu float64, free int64) NodeLoad {
	return NodeLoad{ID: id, Addr: id + ":80", Connections: conns, CPU: cpu, FreeMemory: free, Alive: true}
}

func dead(n NodeLoad) NodeLoad { n.Alive = false; return n }

func assigned(n NodeLoad, k int) NodeLoad { n.Assigned = k; return n }
func covered(n NodeLoad, k int) NodeLoad  { n.Covered = k; return n }

func withLoad(n NodeLoad, load float64) NodeLoad { n.Load = load; return n }

func TestPolicyChoose(t *testing.T) {
	const mb = 1 << 20
	c := conn("192.0.2.1:40000")
	tests := []struct {
		name   string
		policy Policy
		nodes  []NodeLoad
		want   string // "" means ok=false
	}{
		{"rr/first is smallest ID", &RoundRobin{}, []NodeLoad{up("c", 0, 0, 0), up("a", 9, 1, 0), up("b", 0, 0, 0)}, "a"},
		{"rr/skips dead", &RoundRobin{}, []NodeLoad{dead(up("a", 0, 0, 0)), up("b", 0, 0, 0)}, "b"},
		{"rr/empty", &RoundRobin{}, nil, ""},

		{"lc/fewest", LeastConnections{}, []NodeLoad{up("a", 5, 0, 0), up("b", 3, 0, 0), up("c", 4, 0, 0)}, "b"},
		{"lc/counts assigned", LeastConnections{}, []NodeLoad{up("a", 5, 0, 0), assigned(up("b", 3, 0, 0), 4)}, "a"},
		{"lc/tie by ID", LeastConnections{}, []NodeLoad{up("b", 2, 0, 0), up("a", 2, 0, 0)}, "a"},
		{"lc/skips dead", LeastConnections{}, []NodeLoad{dead(up("a", 0, 0, 0)), up("b", 7, 0, 0)}, "b"},
		{"lc/all dead", LeastConnections{}, []NodeLoad{dead(up("a", 0, 0, 0)), dead(up("b", 0, 0, 0))}, ""},

		{"ll/least CPU", LeastLoad{}, []NodeLoad{up("a", 1, 0.9, 0), up("b", 9, 0.3, 0), up("c", 1, 0.5, 0)}, "b"},
		{"ll/CPU over quota", LeastLoad{}, []NodeLoad{up("a", 1, 1.2, 0), up("b", 1, 1.0, 0)}, "b"},
		// a: 0.2 + 3 × (0.2/2) = 0.5 > b: 0.4
		{"ll/projects assigned", LeastLoad{}, []NodeLoad{assigned(up("a", 2, 0.2, 0), 3), up("b", 2, 0.4, 0)}, "b"},
		// short connections: the report covered 4 assignments for 0.4 CPU, so
		// each costs 0.1: a: 0.4 + 2×0.1 = 0.6 > b: 0.55 (by open
		// connections, 0, it would be 0.4 + 2×0.02 = 0.44 < 0.55)
		{"ll/cost from covered assignments", LeastLoad{}, []NodeLoad{covered(assigned(up("a", 0, 0.4, 0), 2), 4), up("b", 0, 0.55, 0)}, "b"},
		// both saturated: the queue (open connections × cost) tells them apart
		{"ll/saturated, shorter queue", LeastLoad{}, []NodeLoad{covered(up("a", 20, 1.0, 0), 3), covered(up("b", 4, 1.0, 0), 3)}, "b"},
		// no connections to estimate from: DefaultConnCPU each, 0.1 + 10×0.02 = 0.3 > 0.25
		{"ll/default conn CPU", LeastLoad{}, []NodeLoad{assigned(up("a", 0, 0.1, 0), 10), up("b", 0, 0.25, 0)}, "b"},
		{"ll/explicit conn CPU", LeastLoad{ConnCPU: 0.001}, []NodeLoad{assigned(up("a", 0, 0.1, 0), 10), up("b", 0, 0.25, 0)}, "a"},
		{"ll/tie CPU then run queue", LeastLoad{}, []NodeLoad{withLoad(up("a", 1, 0.5, 0), 2), withLoad(up("b", 1, 0.5, 0), 0.5)}, "b"},
		{"ll/tie CPU, load, then conns", LeastLoad{}, []NodeLoad{up("a", 3, 0, 0), up("b", 1, 0, 0)}, "b"},
		{"ll/skips dead", LeastLoad{}, []NodeLoad{dead(up("a", 0, 0, 0)), up("b", 1, 0.99, 0)}, "b"},

		{"mem/most free", MostFreeMemory{}, []NodeLoad{up("a", 0, 0, 100*mb), up("b", 0, 0, 900*mb), up("c", 0, 0, 500*mb)}, "b"},
		// b: 900 − 20 × 32 = 260 MB < a: 300 MB
		{"mem/counts assigned", MostFreeMemory{}, []NodeLoad{up("a", 0, 0, 300*mb), assigned(up("b", 0, 0, 900*mb), 20)}, "a"},
		{"mem/tie then conns", MostFreeMemory{}, []NodeLoad{up("a", 4, 0, mb), up("b", 2, 0, mb)}, "b"},
		{"mem/skips dead", MostFreeMemory{}, []NodeLoad{dead(up("a", 0, 0, 900*mb)), up("b", 0, 0, mb)}, "b"},

		{"p2c/one alive", NewPowerOfTwo(rand.New(rand.NewPCG(1, 2))), []NodeLoad{dead(up("a", 0, 0, 0)), up("b", 50, 0, 0)}, "b"},
		{"p2c/two: less busy", NewPowerOfTwo(rand.New(rand.NewPCG(1, 2))), []NodeLoad{up("a", 5, 0, 0), assigned(up("b", 1, 0, 0), 1)}, "b"},
		{"p2c/empty", NewPowerOfTwo(rand.New(rand.NewPCG(1, 2))), []NodeLoad{}, ""},

		{"hash/only alive", StaticHash{}, []NodeLoad{dead(up("a", 0, 0, 0)), up("b", 99, 1, 0)}, "b"},
		{"hash/all dead", StaticHash{}, []NodeLoad{dead(up("a", 0, 0, 0))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := tt.policy.Choose(c, tt.nodes)
			if ok != (tt.want != "") || id != tt.want {
				t.Fatalf("Choose = %q, %v; want %q", id, ok, tt.want)
			}
		})
	}
}

// TestPolicyNeverChoosesDead runs every policy over many connections and
// node sets with dead members.
func TestPolicyNeverChoosesDead(t *testing.T) {
	nodes := []NodeLoad{
		dead(up("a", 0, 0, 1<<40)), up("b", 5, 0.5, 1<<20), dead(up("c", 0, 0, 1<<40)),
		up("d", 7, 0.7, 1<<21), dead(up("e", 0, 0, 0)),
	}
	for _, name := range PolicyNames {
		t.Run(name, func(t *testing.T) {
			p, err := NewPolicy(name, rand.New(rand.NewPCG(7, 7)))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 500 {
				c := conn(fmt.Sprintf("198.51.100.%d:%d", i%250, 1024+i))
				id, ok := p.Choose(c, nodes)
				if !ok || (id != "b" && id != "d") {
					t.Fatalf("conn %d: Choose = %q, %v; want b or d", i, id, ok)
				}
			}
			if id, ok := p.Choose(conn("192.0.2.1:1"), nil); ok {
				t.Fatalf("no nodes: chose %q", id)
			}
			allDead := []NodeLoad{dead(up("a", 0, 0, 0)), dead(up("b", 0, 0, 0))}
			if id, ok := p.Choose(conn("192.0.2.1:1"), allDead); ok {
				t.Fatalf("all dead: chose %q", id)
			}
		})
	}
}

func TestRoundRobinCycles(t *testing.T) {
	rr := &RoundRobin{}
	nodes := []NodeLoad{up("c", 0, 0, 0), up("a", 0, 0, 0), dead(up("b", 0, 0, 0))}
	var got []string
	choose := func() {
		id, _ := rr.Choose(Conn{}, nodes)
		got = append(got, id)
	}
	choose() // a
	choose() // c
	choose() // a
	nodes = append(nodes, up("d", 0, 0, 0))
	choose() // c
	choose() // d: the newcomer takes its turn
	nodes[0].Alive = false
	choose() // a (c died)
	choose() // d
	want := []string{"a", "c", "a", "c", "d", "a", "d"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sequence %v, want %v", got, want)
	}
}

func TestPowerOfTwoSeeded(t *testing.T) {
	nodes := []NodeLoad{up("a", 0, 0, 0), up("b", 0, 0, 0), up("busy", 100, 0, 0), up("c", 0, 0, 0)}
	run := func(seed uint64) []string {
		p := NewPowerOfTwo(rand.New(rand.NewPCG(seed, seed)))
		out := make([]string, 300)
		for i := range out {
			out[i], _ = p.Choose(Conn{}, nodes)
		}
		return out
	}
	first := run(42)
	if fmt.Sprint(first) != fmt.Sprint(run(42)) {
		t.Fatal("same seed gave different choices")
	}
	if fmt.Sprint(first) == fmt.Sprint(run(43)) {
		t.Fatal("different seeds gave the same 300 choices")
	}
	counts := map[string]int{}
	for _, id := range first {
		counts[id]++
	}
	// Two distinct samples: the busy node always loses to the other one.
	if counts["busy"] != 0 {
		t.Fatalf("busy node chosen %d times", counts["busy"])
	}
	for _, id := range []string{"a", "b", "c"} {
		if counts[id] == 0 {
			t.Fatalf("%s never chosen: %v", id, counts)
		}
	}
}

func TestStaticHashStable(t *testing.T) {
	nodes := []NodeLoad{up("a", 0, 0, 0), up("b", 0, 0, 0), up("c", 0, 0, 0)}
	c := conn("203.0.113.9:51234")
	want, ok := StaticHash{}.Choose(c, nodes)
	if !ok {
		t.Fatal("no choice")
	}
	if i := int(c.Hash() % 3); nodes[i].ID != want {
		t.Fatalf("chose %q, want nodes[hash mod 3] = %q", want, nodes[i].ID)
	}
	// No feedback: figures change, the choice does not.
	for i := range 100 {
		for j := range nodes {
			nodes[j].Connections = (i * (j + 1)) % 17
			nodes[j].CPU = float64((i+j)%10) / 10
		}
		if id, _ := (StaticHash{}).Choose(c, nodes); id != want {
			t.Fatalf("choice %d moved from %q to %q", i, want, id)
		}
	}
	// Same address, other port: may differ; many ports reach every node.
	seen := map[string]bool{}
	for port := 40000; port < 40100; port++ {
		id, _ := StaticHash{}.Choose(conn(fmt.Sprintf("203.0.113.9:%d", port)), nodes)
		seen[id] = true
	}
	if len(seen) != 3 {
		t.Fatalf("100 ports reached only %v", seen)
	}
	// The hash is of address and port alone, the same for 4-in-6 form.
	if conn("203.0.113.9:51234").Hash() != conn("[::ffff:203.0.113.9]:51234").Hash() {
		t.Fatal("IPv4 and IPv4-mapped forms hash differently")
	}
}

func TestNewPolicy(t *testing.T) {
	for _, name := range PolicyNames {
		p, err := NewPolicy(name, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Name() != name {
			t.Fatalf("NewPolicy(%q).Name() = %q", name, p.Name())
		}
	}
	if _, err := NewPolicy("isn-mod-n", nil); !errors.Is(err, ErrUnknownPolicy) {
		t.Fatalf("unknown name: err = %v", err)
	}
}
