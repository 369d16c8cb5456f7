package filehttp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mure-dev/mure/internal/files"
	"github.com/mure-dev/mure/internal/meta"
)

// FuzzParseWriteHeaders feeds parseWriteReq (PUT and DELETE) arbitrary
// paths, If-Match, If-None-Match and Idempotency-Key values and query
// strings. Run it with
//
//	go test ./internal/files/filehttp -run XXX -fuzz '^FuzzParseWriteHeaders$' -fuzztime 1000000x -parallel=1
//
// (FuzzValidatePath, in internal/files/path_test.go, is the other target.)
func FuzzParseWriteHeaders(f *testing.F) {
	for _, c := range []struct{ path, ifMatch, ifNoneMatch, idem, query string }{
		{"a/b.txt", "", "", "", ""},
		{"a", `"12"`, "", "key-1", ""},
		{"a", `W/"12"`, "", "", "hop=2"},
		{"a", "*", "*", "", ""},
		{"a", "", " * ", "", "hop=x&stale=1"},
		{"a", "", `"3"`, "", ""},
		{"a", `"0"`, "", "", ""},
		{"a", `"1", "2"`, "", "", ""},
		{"a", " * ", "", "", ""},
		{"a", "", "", "has space", ""},
		{"a", "", "", strings.Repeat("k", 128), ""},
		{"a", "", "", strings.Repeat("k", 129), ""},
		{"a", "", "", "caf\u00e9", ""},
		{"a", "", "", "\x7f", ""},
		{"", "", "", "", ""},
		{"/abs", "", "", "", ""},
		{"a/../b", `"1"`, "*", "k", "%zz"},
		{"a\x00b", "", "", "", ""},
		{"\xff", "", "", "", ""},
	} {
		f.Add(c.path, c.ifMatch, c.ifNoneMatch, c.idem, c.query)
	}
	f.Fuzz(func(t *testing.T, path, ifMatch, ifNoneMatch, idem, query string) {
		req := httptest.NewRequest(http.MethodPut, "/files/x", nil)
		req.URL.RawQuery = query
		req.SetPathValue("path", path)
		for k, v := range map[string]string{"If-Match": ifMatch, "If-None-Match": ifNoneMatch, "Idempotency-Key": idem} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		wr, status, code, msg := parseWriteReq(req) // must not panic
		if status != 0 {
			if status != http.StatusBadRequest || code == "" || msg == "" {
				t.Fatalf("refused with status %d, code %q, message %q", status, code, msg)
			}
			return
		}
		if code != "" || msg != "" {
			t.Fatalf("accepted with code %q, message %q", code, msg)
		}
		if err := files.ValidatePath(wr.path); err != nil || wr.path != path {
			t.Fatalf("accepted path %q (parsed %q): %v", path, wr.path, err)
		}
		if len(wr.idem) > 128 {
			t.Fatalf("accepted an idempotency key of %d bytes", len(wr.idem))
		}
		for i := 0; i < len(wr.idem); i++ {
			if c := wr.idem[i]; c < 0x21 || c > 0x7e {
				t.Fatalf("accepted idempotency key %q with byte 0x%02x", wr.idem, c)
			}
		}
		if wr.idem != idem {
			t.Fatalf("idempotency key %q became %q", idem, wr.idem)
		}
		switch {
		case ifMatch == "" || ifMatch == "*":
			if wr.cond.IfMatch != 0 {
				t.Fatalf("If-Match %q gave IfMatch %d", ifMatch, wr.cond.IfMatch)
			}
		default:
			v, ok := meta.ParseETag(strings.TrimSpace(ifMatch))
			if !ok || v == 0 || wr.cond.IfMatch != v {
				t.Fatalf("If-Match %q gave IfMatch %d (ParseETag: %d, %v)", ifMatch, wr.cond.IfMatch, v, ok)
			}
		}
		if wantINM := ifNoneMatch != ""; wr.cond.IfNoneMatch != wantINM || wantINM && strings.TrimSpace(ifNoneMatch) != "*" {
			t.Fatalf("If-None-Match %q gave IfNoneMatch %v", ifNoneMatch, wr.cond.IfNoneMatch)
		}
	})
}
