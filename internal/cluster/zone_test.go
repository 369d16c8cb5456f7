package cluster

import (
	"errors"
	"strings"
	"testing"
)

func TestValidZone(t *testing.T) {
	for _, tc := range []struct {
		zone string
		ok   bool
	}{
		{"", true},
		{"rack-1", true},
		{"eu_west.a", true},
		{strings.Repeat("z", MaxZoneLen), true},
		{strings.Repeat("z", MaxZoneLen+1), false},
		{"rack 1", false},
		{"zoné", false},
		{"a/b", false},
	} {
		t.Run(tc.zone, func(t *testing.T) {
			err := ValidZone(tc.zone)
			if tc.ok != (err == nil) {
				t.Fatalf("ValidZone(%q) = %v, want ok=%v", tc.zone, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrBadZone) {
				t.Fatalf("error %v is not ErrBadZone", err)
			}
		})
	}
}
