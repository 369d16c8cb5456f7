package node

import "testing"

func TestIsUIPath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/", true},
		{"/ui", true},
		{"/ui/", true},
		{"/ui/api/view", true},
		{"/history", true},
		{"/metrics", true},
		{"/status", true},
		{"/healthz", true},
		{"/readyz", true},
		{"/uix", false},
		{"/historyx", false},
		{"/files/ui", false},
		{"/files/a", false},
		{"/auth/users", false},
		{"/config", false},
		{"/sessions", false},
		{"", false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if got := isUIPath(tc.path); got != tc.want {
				t.Errorf("isUIPath(%q) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}
