package s3

import (
	"errors"
	"strings"
	"testing"
)

// Every key is a file path and back, or refused with InvalidObjectName:
// never rewritten but for the folder marker of a trailing '/'.
func TestKeysAndPaths(t *testing.T) {
	cases := []struct {
		key, path string // path "": refused
		why       string // a word of the refusal's message
	}{
		{"a.txt", "b/a.txt", ""},
		{"dir/", "b/dir/.s3folder", ""},
		{"a/b/c/", "b/a/b/c/.s3folder", ""},
		{"with space/and+plus%25 & ü 🙂", "b/with space/and+plus%25 & ü 🙂", ""},
		{"..dots../...", "b/..dots../...", ""},
		{"/", "", "starting with"},
		{"/abs", "", "starting with"},
		{"a//b", "", "empty segment"},
		{"a//", "", "empty segment"},
		{"x/../y", "", `".." segment`},
		{"./y", "", `"." segment`},
		{"..", "", `".." segment`},
		{"dir/../", "", `".." segment`},
		{`back\slash`, "", "backslash"},
		{"tab\there", "", "control"},
		{".s3bucket", "", "reserved"},
		{".s3uploads/x", "", "reserved"},
		{"d/.s3folder", "", "reserved"},
		{strings.Repeat("k", 1022), "b/" + strings.Repeat("k", 1022), ""},
		{strings.Repeat("k", 1023), "", "limit"},
		{"", "", "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			err := validKey("b", tc.key)
			if tc.path == "" {
				var e *Error
				if !errors.As(err, &e) || e.Code != CodeInvalidObjectName || !strings.Contains(e.Message, tc.why) {
					t.Fatalf("got %v, want InvalidObjectName saying %q", err, tc.why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p := pathOf("b", tc.key); p != tc.path {
				t.Fatalf("path %q, want %q", p, tc.path)
			}
			if k, hidden := keyOf("b/", tc.path); k != tc.key || hidden {
				t.Fatalf("key of %q: %q (hidden %v), want %q", tc.path, k, hidden, tc.key)
			}
		})
	}
	for _, p := range []string{"b/.s3bucket", "b/.s3folder", "b/.s3uploads/0123/key"} {
		if _, hidden := keyOf("b/", p); !hidden {
			t.Errorf("%s is listed as an object", p)
		}
	}
}
