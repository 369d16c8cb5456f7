package dispatch

import (
	"fmt"
	"testing"
	"time"
)

func alwaysAlive(string) bool { return true }

func TestAffinityTTL(t *testing.T) {
	clk := newFakeClock()
	a := NewAffinity(AffinityConfig{TTL: 10 * time.Second, Now: clk.Now})
	a.Remember(conn("192.0.2.1:1000"), "n1")
	tests := []struct {
		name    string
		advance time.Duration
		want    string // "" means forgotten
	}{
		{"at once", 0, "n1"},
		{"just inside TTL", 10*time.Second - time.Nanosecond, "n1"},
		{"at TTL", time.Nanosecond, ""},
		{"after", time.Hour, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.Advance(tt.advance)
			id, ok := a.Lookup(conn("192.0.2.1:2000"), alwaysAlive)
			if ok != (tt.want != "") || id != tt.want {
				t.Fatalf("Lookup = %q, %v; want %q", id, ok, tt.want)
			}
		})
	}
	if a.Len() != 0 {
		t.Fatalf("expired entry kept: Len = %d", a.Len())
	}
}

func TestAffinityRememberRestartsTTL(t *testing.T) {
	clk := newFakeClock()
	a := NewAffinity(AffinityConfig{TTL: 10 * time.Second, Now: clk.Now})
	c := conn("192.0.2.1:1000")
	a.Remember(c, "n1")
	clk.Advance(8 * time.Second)
	a.Remember(c, "n2")
	clk.Advance(8 * time.Second)
	if id, ok := a.Lookup(c, alwaysAlive); !ok || id != "n2" {
		t.Fatalf("Lookup = %q, %v; want n2", id, ok)
	}
}

func TestAffinityDeadNode(t *testing.T) {
	a := NewAffinity(AffinityConfig{Now: newFakeClock().Now})
	c := conn("192.0.2.1:1000")
	a.Remember(c, "n1")
	if _, ok := a.Lookup(c, func(id string) bool { return id != "n1" }); ok {
		t.Fatal("returned a dead node")
	}
	if _, ok := a.Lookup(c, alwaysAlive); ok {
		t.Fatal("entry for a dead node not forgotten")
	}
}

func TestAffinityCapacity(t *testing.T) {
	clk := newFakeClock()
	a := NewAffinity(AffinityConfig{TTL: time.Hour, Capacity: 3, Now: clk.Now})
	for i := 1; i <= 3; i++ {
		a.Remember(conn(fmt.Sprintf("192.0.2.%d:1", i)), fmt.Sprint("n", i))
		clk.Advance(time.Second)
	}
	a.Remember(conn("192.0.2.1:2"), "n1") // refreshes client 1: now newest
	a.Remember(conn("192.0.2.4:1"), "n4") // evicts the oldest: client 2
	if a.Len() != 3 {
		t.Fatalf("Len = %d, want 3", a.Len())
	}
	for i, want := range []string{"n1", "", "n3", "n4"} {
		id, ok := a.Lookup(conn(fmt.Sprintf("192.0.2.%d:9", i+1)), alwaysAlive)
		if ok != (want != "") || id != want {
			t.Errorf("client %d: Lookup = %q, %v; want %q", i+1, id, ok, want)
		}
	}
}

func TestAffinityKeys(t *testing.T) {
	tests := []struct {
		name string
		key  KeyFunc
		a, b string
		same bool
	}{
		{"addr/new port", ByAddr, "192.0.2.1:1000", "192.0.2.1:2000", true},
		{"addr/other host", ByAddr, "192.0.2.1:1000", "192.0.2.2:1000", false},
		{"addrport/new port", ByAddrPort, "192.0.2.1:1000", "192.0.2.1:2000", false},
		{"addrport/same", ByAddrPort, "192.0.2.1:1000", "192.0.2.1:1000", true},
		{"prefix24/same net", ByPrefix(24), "192.0.2.1:1000", "192.0.2.200:5", true},
		{"prefix24/other net", ByPrefix(24), "192.0.2.1:1000", "192.0.3.1:1000", false},
		{"prefix64/v6", ByPrefix(64), "[2001:db8::1]:1", "[2001:db8::ffff]:2", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAffinity(AffinityConfig{Key: tt.key, Now: newFakeClock().Now})
			a.Remember(conn(tt.a), "n1")
			_, ok := a.Lookup(conn(tt.b), alwaysAlive)
			if ok != tt.same {
				t.Fatalf("Lookup(%s) after Remember(%s): %v, want %v", tt.b, tt.a, ok, tt.same)
			}
		})
	}
}
