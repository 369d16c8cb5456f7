package transport

import (
	"encoding/base64"
	"strings"
	"testing"
)

// FuzzParseKey feeds ParseKey arbitrary strings. Run it with
//
//	go test ./internal/transport -run XXX -fuzz '^FuzzParseKey$' -fuzztime 1000000x -parallel=1
//
// The mux's protocol byte has no pure function to fuzz: it is read inside
// serverHandshake, after a TLS handshake, and routed by a map lookup in
// serveConn (TestMuxUnknownProtoClosed covers an unknown byte).
func FuzzParseKey(f *testing.F) {
	var k Key
	for i := range k {
		k[i] = byte(i * 7)
	}
	canon := k.String()
	for _, s := range []string{
		canon, " " + canon + "\n", "\t" + canon + "\r\n", canon[:22] + "\n" + canon[22:], canon[:len(canon)-2] + "B=",
		canon[:len(canon)-1], strings.TrimRight(canon, "="), canon + "=", canon + "AAAA",
		base64.URLEncoding.EncodeToString(make([]byte, 32)), base64.StdEncoding.EncodeToString(make([]byte, 31)),
		base64.StdEncoding.EncodeToString(make([]byte, 33)), "", "=", "not*base64!", strings.Repeat("A", 44),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			if k != (Key{}) {
				t.Fatalf("ParseKey(%q) failed (%v) but returned a non-zero key", s, err)
			}
			return
		}
		enc := k.String()
		if len(enc) != 44 {
			t.Fatalf("String() of a key is %d characters: %q", len(enc), enc)
		}
		k2, err := ParseKey(enc)
		if err != nil || k2 != k {
			t.Fatalf("ParseKey(%q) = %x; its String %q parses to %x, %v", s, k, enc, k2, err)
		}
		// The canonical text is the input less surrounding whitespace, unless
		// the input used one of the two liberties of base64.StdEncoding: line
		// breaks inside the text, and non-zero unused bits in the last
		// character. Anything else accepted would be a third spelling.
		in := strings.TrimSpace(s)
		if enc == in {
			return
		}
		unwrapped := strings.NewReplacer("\r", "", "\n", "").Replace(in)
		if enc == unwrapped {
			return
		}
		if b, err := base64.StdEncoding.Strict().DecodeString(unwrapped); err == nil {
			t.Fatalf("ParseKey(%q) = %q: a strictly valid encoding %x that is not the canonical one", s, enc, b)
		}
		if len(unwrapped) != 44 || unwrapped[:42] != enc[:42] || unwrapped[43:] != "=" {
			t.Fatalf("ParseKey(%q) accepted a spelling of %q that differs beyond the last character's unused bits", s, enc)
		}
	})
}
