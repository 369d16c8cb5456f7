package dispatch

import (
	"testing"

	"github.com/mure-dev/mure/internal/meta"
)

// The policy setting is registered with meta by this package, and meta
// validates it through the registration.
func TestPolicySetting(t *testing.T) {
	tests := []struct {
		value string
		ok    bool
	}{
		{"least-connections", true},
		{"static-hash", true},
		{"", true},
		{"fastest", false},
		{"Least-Connections", false},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			err := meta.ValidateSetting(SettingPolicy, tc.value)
			if (err == nil) != tc.ok {
				t.Fatalf("ValidateSetting(%q, %q) = %v, want ok=%v", SettingPolicy, tc.value, err, tc.ok)
			}
		})
	}
	if d, ok := meta.DefaultConfig()[SettingPolicy]; !ok || d != "" {
		t.Fatalf("default %q, registered %v; want \"\", true", d, ok)
	}
}
