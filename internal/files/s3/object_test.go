package s3

import (
	"net/http"
	"testing"
)

func TestLeadingRange(t *testing.T) {
	for _, tc := range []struct {
		name, rng, ifRange string
		off, n             int64
		ok                 bool
	}{
		{"closed", "bytes=4001-4010", "", 4001, 10, true},
		{"open", "bytes=7990-", "", 7990, 0, true},
		{"one byte", "bytes=0-0", "", 0, 1, true},
		{"with If-Range, ignored as S3 does", "bytes=10-19", `"etag"`, 10, 10, true},
		{"suffix", "bytes=-5", "", 0, 0, false},
		{"several", "bytes=0-1,5-6", "", 0, 0, false},
		{"end before start", "bytes=9-3", "", 0, 0, false},
		{"other unit", "items=0-1", "", 0, 0, false},
		{"none", "", "", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.rng != "" {
				h.Set("Range", tc.rng)
			}
			if tc.ifRange != "" {
				h.Set("If-Range", tc.ifRange)
			}
			off, n, ok := leadingRange(h)
			if off != tc.off || n != tc.n || ok != tc.ok {
				t.Errorf("leadingRange(%q) = %d, %d, %v; want %d, %d, %v", tc.rng, off, n, ok, tc.off, tc.n, tc.ok)
			}
		})
	}
}
