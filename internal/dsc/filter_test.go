package dsc

import (
	"net/netip"
	"testing"

	"golang.org/x/net/bpf"
)

// runFilter runs raw over frame in the x/net BPF VM, as the kernel would.
func runFilter(t *testing.T, raw []bpf.RawInstruction, frame []byte) int {
	t.Helper()
	insts, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("Disassemble: not every instruction decoded")
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	n, err := vm.Run(frame)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return n
}

func TestSYNFilter(t *testing.T) {
	raw, err := SYNFilter(testServer.Addr(), testServer.Port())
	if err != nil {
		t.Fatalf("SYNFilter: %v", err)
	}
	flags := func(f byte) []byte {
		return ether(0x0800, false, synWith(func(p []byte, ihl int) { p[ihl+13] = f }))
	}
	tests := []struct {
		name   string
		frame  []byte
		accept bool
	}{
		{"syn", ether(0x0800, false, testSYN()), true},
		{"syn with ip options", ether(0x0800, false, withIPOptions()), true},
		{"syn with ecn flags", flags(0xc2), true}, // ECE|CWR: an ECN-setup SYN
		{"syn-ack", flags(0x12), false},
		{"ack", flags(0x10), false},
		{"rst", flags(0x04), false},
		{"other port", ether(0x0800, false, synWith(func(p []byte, ihl int) { p[ihl+3]++ })), false},
		{"other dst ip", ether(0x0800, false, synWith(func(p []byte, _ int) { p[19]++ })), false},
		{"udp", ether(0x0800, false, synWith(func(p []byte, _ int) { p[9] = 17 })), false},
		{"ipv6", ether(0x86dd, false, testSYN()), false},
		{"more fragments", ether(0x0800, false, synWith(func(p []byte, _ int) { p[6] = 0x20 })), false},
		{"fragment offset", ether(0x0800, false, synWith(func(p []byte, _ int) { p[7] = 0x01 })), false},
		// Documented limitation: the filter reads fixed offsets of an
		// untagged frame.
		{"vlan tagged", ether(0x0800, true, testSYN()), false},
		// A read past the frame ends the program with 0 in BPF.
		{"truncated", ether(0x0800, false, testSYN())[:40], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := 0
			if tt.accept {
				want = len(tt.frame)
			}
			if got := runFilter(t, raw, tt.frame); got != want {
				t.Errorf("filter returned %d, want %d", got, want)
			}
		})
	}
}

func TestSYNFilterAddress(t *testing.T) {
	if _, err := SYNFilter(netip.MustParseAddr("fd00::1"), 80); err == nil {
		t.Errorf("SYNFilter(IPv6) succeeded, want an error")
	}
	// An IPv4-mapped IPv6 address is the same IPv4 address.
	raw, err := SYNFilter(netip.MustParseAddr("::ffff:10.77.0.200"), 8080)
	if err != nil {
		t.Fatalf("SYNFilter(mapped): %v", err)
	}
	frame := ether(0x0800, false, testSYN())
	if got := runFilter(t, raw, frame); got != len(frame) {
		t.Errorf("filter returned %d, want %d", got, len(frame))
	}
}
