package frontdoor

import (
	"strings"
	"testing"
)

// TestConfigRejects: a front door configuration that cannot work is refused
// with a message that names the flag's values to use.
func TestConfigRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // in the error; "" = accepted
	}{
		{"defaults", Config{}, ""},
		{"single address, kernel path", Config{Mode: ModeSingleAddress, SYNPath: "kernel"}, ""},
		{"single address, isn-hash", Config{Mode: ModeSingleAddress, SYNPath: "isn-hash"}, ""},
		{"unknown mode", Config{Mode: "tunnel"}, "use redirect, proxy or single-address"},
		{"unknown SYN path", Config{Mode: ModeSingleAddress, SYNPath: "xdp"}, "use auto, kernel, user or isn-hash"},
		{"SYN path without the mode", Config{Mode: ModeProxy, SYNPath: "kernel"}, "single-address mode only"},
		{"auto everywhere", Config{Mode: ModeRedirect, SYNPath: "auto"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.defaults()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// The service checks its configuration when built, before the node opens
// anything.
func TestNewServiceChecksConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", Config{Addr: "127.0.0.1:0"}, true},
		{"no port", Config{Addr: "127.0.0.1"}, false},
		{"bad mode", Config{Addr: "127.0.0.1:0", Mode: "teleport"}, false},
		{"bad policy", Config{Addr: "127.0.0.1:0", Policy: "fastest"}, false},
		{"half a VIP", Config{Addr: "127.0.0.1:0", VIP: "10.0.0.1/24"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewService(tc.cfg); (err == nil) != tc.ok {
				t.Fatalf("NewService: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
