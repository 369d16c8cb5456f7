package store

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
)

// FuzzSidecar fuzzes the sidecar format of meta.go (encode / decodeMeta),
// both pure functions of bytes. Run it with
//
//	go test ./internal/store -run XXX -fuzz '^FuzzSidecar$' -fuzztime 1000000x -parallel=1
//
// The first argument is an arbitrary sidecar: decoding it must not panic and
// what it accepts must satisfy the format's rules and re-encode to a
// sidecar that decodes to the same value. The other arguments generate a
// meta value (mapped onto the valid domain) that must survive
// decodeMeta(encode(m)) exactly and whose encoding must be canonical.
func FuzzSidecar(f *testing.F) {
	sum := func(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:]) }
	good := meta{Path: "a/b", ID: "v-1_x", Size: 12345, Sum: sum("x")}
	f.Add(good.encode(), good.Path, good.ID, good.Size, good.Sum)
	f.Add([]byte(strings.Replace(string(good.encode()), `"a/b"`, "`a/b`", 1)), "\xff\x00\n\"q\"", "id", int64(0), "")
	f.Add([]byte(strings.Replace(string(good.encode()), `"a/b"`, `'a'`, 1)), "日本", strings.Repeat("z", 64), int64(1)<<62, sum(""))
	f.Add([]byte(strings.Replace(string(good.encode()), "size 12345", "size +007", 1)), "", "", int64(-1), "ABC")
	f.Add([]byte(strings.Replace(string(good.encode()), "\n", "\r\n", -1)), "a\r\nb", "bad.id", int64(5), strings.Repeat("F", 64))
	for _, bad := range []string{
		"", "mure-blob 1\n", "mure-blob 2\npath \"a\"\nid x\nsize 1\nsha256 " + sum("") + "\n",
		"mure-blob 1\npath \"a\"\nid x\nsize -1\nsha256 " + sum("") + "\n",
		"mure-blob 1\npath a\nid x\nsize 1\nsha256 " + sum("") + "\n",
		"mure-blob 1\npath \"a\"\nid x.meta\nsize 1\nsha256 " + sum("") + "\n",
		"mure-blob 1\npath \"a\"\nid x\nsize 99999999999999999999\nsha256 " + sum("") + "\n",
	} {
		f.Add([]byte(bad), "p", "x", int64(1), "")
	}
	f.Fuzz(func(t *testing.T, data []byte, path, id string, size int64, sumIn string) {
		// 1. Arbitrary bytes.
		if m, err := decodeMeta(data); err == nil {
			if !validID(m.ID) || !validSum(m.Sum) || m.Size < 0 {
				t.Fatalf("decodeMeta(%q) accepted invalid fields %+v", data, m)
			}
			m2, err := decodeMeta(m.encode())
			if err != nil || m2 != m {
				t.Fatalf("decodeMeta(%q) = %+v; re-encoded as %q it decodes to %+v, %v", data, m, m.encode(), m2, err)
			}
		}

		// 2. Generated values on the valid domain.
		if !validID(id) {
			id = "id" + strconv.Itoa(len(id))
		}
		if size < 0 {
			size = -(size + 1)
		}
		if !validSum(sumIn) {
			sumIn = sum(sumIn)
		}
		m := meta{Path: path, ID: id, Size: size, Sum: sumIn}
		enc := m.encode()
		got, err := decodeMeta(enc)
		if err != nil || got != m {
			t.Fatalf("decodeMeta(encode(%+v)) = %+v, %v (encoded %q)", m, got, err, enc)
		}
		if s := string(enc); strings.Count(s, "\n") != 5 || !strings.HasSuffix(s, "\n") {
			t.Fatalf("encode(%+v) is not five lines: %q", m, enc)
		}
		if string(got.encode()) != string(enc) {
			t.Fatalf("encoding of %+v is not canonical", m)
		}
	})
}
