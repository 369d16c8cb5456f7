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
