package files

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidatePath(t *testing.T) {
	long := strings.Repeat("a", MaxPathLen)
	longSegs := strings.Repeat("ab/", MaxPathLen/3) + "c" // 1024 bytes
	tests := []struct {
		name string
		path string
		ok   bool
	}{
		{"simple", "a", true},
		{"nested", "a/b/c.txt", true},
		{"dots inside names", "a/.hidden/b..c/...", true},
		{"dot suffix", "a./b.", true},
		{"spaces", "my dir/my file", true},
		{"unicode", "répertoire/ファイル/🙂", true},
		{"max rune", "a/\U0010FFFF", true},
		{"tilde percent hash", "~/%2F/#x?y", true},
		{"exactly max length", long, true},
		{"max length with segments", longSegs, true},
		{"one over max length", long + "b", false},
		{"empty", "", false},
		{"root", "/", false},
		{"leading slash", "/a", false},
		{"trailing slash", "a/", false},
		{"double slash", "a//b", false},
		{"dot", ".", false},
		{"dot dot", "..", false},
		{"dot segment", "a/./b", false},
		{"dot dot segment", "a/../b", false},
		{"leading dot segment", "./a", false},
		{"leading dot dot", "../a", false},
		{"trailing dot", "a/.", false},
		{"trailing dot dot", "a/..", false},
		{"NUL", "a\x00b", false},
		{"newline", "a\nb", false},
		{"tab", "a\tb", false},
		{"unit separator", "a\x1fb", false},
		{"DEL", "a\x7fb", false},
		{"backslash", `a\b`, false},
		{"backslash dot dot", `..\x`, false},
		{"invalid UTF-8", "a\xffb", false},
		{"truncated UTF-8", "a\xc3", false},
		{"surrogate half", "a\xed\xa0\x80", false},
		{"overlong slash", "a\xc0\xafb", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.path) > MaxPathLen+1 {
				t.Fatalf("test path of %d bytes", len(tc.path))
			}
			err := ValidatePath(tc.path)
			if (err == nil) != tc.ok {
				t.Fatalf("ValidatePath(%q) = %v, want ok=%v", tc.path, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrBadPath) {
				t.Fatalf("error %v does not wrap ErrBadPath", err)
			}
		})
	}
}

// pathOK is the rule of docs/api.md ("Paths"), written independently.
func pathOK(p string) bool {
	if len(p) == 0 || len(p) > MaxPathLen || !utf8.ValidString(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{
		"a", "a/b/c.txt", "", "/", "/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "./a", "a/..",
		"...", "a/.b", "a\x00b", "a\nb", "a\x7f", "a\\b", "a\xff", "a\xc3", "\xed\xa0\x80",
		"é/ü", "a/\U0010FFFF", "\u0085", strings.Repeat("a", MaxPathLen), strings.Repeat("a", MaxPathLen+1),
		strings.Repeat("é", MaxPathLen/2) + "x", strings.Repeat("x/", 600),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := ValidatePath(p) // must not panic
		if err != nil {
			if !errors.Is(err, ErrBadPath) {
				t.Fatalf("ValidatePath(%q) = %v, does not wrap ErrBadPath", p, err)
			}
			if pathOK(p) {
				t.Fatalf("ValidatePath(%q) rejected a valid path: %v", p, err)
			}
			return
		}
		if len(p) == 0 || len(p) > MaxPathLen {
			t.Fatalf("accepted %q of %d bytes", p, len(p))
		}
		if !utf8.ValidString(p) {
			t.Fatalf("accepted invalid UTF-8 %q", p)
		}
		for i := 0; i < len(p); i++ {
			if c := p[i]; c == 0 || c < 0x20 || c == 0x7f {
				t.Fatalf("accepted %q with control byte 0x%02x", p, c)
			}
		}
		if strings.ContainsRune(p, '\\') {
			t.Fatalf("accepted %q with a backslash", p)
		}
		for _, seg := range strings.Split(p, "/") {
			switch seg {
			case "", ".", "..":
				t.Fatalf("accepted %q with segment %q", p, seg)
			}
		}
		if !pathOK(p) {
			t.Fatalf("accepted %q, which the reference rule rejects", p)
		}
	})
}
