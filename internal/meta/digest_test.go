package meta

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unsafe"
)

// A sum is hex on the wire and in JSON, raw in the record; what is not
// hex of the right length is refused with a message that names it.
func TestParseSHA256(t *testing.T) {
	lower := strings.Repeat("0123456789abcdef", 4)
	cases := []struct {
		in, want string // want "": no sum
		bad      bool
	}{
		{"", "", false},
		{lower, lower, false},
		{strings.ToUpper(lower), lower, false},
		{lower[:63], "", true},
		{lower + "0", "", true},
		{lower[:63] + "g", "", true},
		{"s", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			d, err := ParseSHA256(tc.in)
			if tc.bad {
				if err == nil || !errors.Is(err, ErrBadCommand) || !strings.Contains(err.Error(), "sha256") {
					t.Fatalf("ParseSHA256(%q) = %v, %v; want a bad-command error naming the sha256", tc.in, d, err)
				}
				if !d.IsZero() {
					t.Fatalf("a refused sum left %v", d)
				}
				return
			}
			if err != nil || d.String() != tc.want {
				t.Fatalf("ParseSHA256(%q) = %q, %v; want %q", tc.in, d, err, tc.want)
			}
		})
	}
}

// A record crosses the wire (Result.File) in the JSON it had when sums
// were strings: hex, and no field when there is none.
func TestFileJSONKeepsHexSums(t *testing.T) {
	sum, md5 := strings.Repeat("ab", 32), strings.Repeat("cd", 16)
	f := &File{Path: "p", Version: 2, Sum: mustSHA256(t, sum), MD5: mustMD5(t, md5)}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"sha256":"`+sum+`"`)) || !bytes.Contains(b, []byte(`"md5":"`+md5+`"`)) {
		t.Fatalf("JSON %s does not carry the sums in hex", b)
	}
	var back File
	if err := json.Unmarshal(b, &back); err != nil || back.Sum != f.Sum || back.MD5 != f.MD5 {
		t.Fatalf("read back as %+v, %v", back, err)
	}
	b, _ = json.Marshal(&File{Path: "p"})
	if bytes.Contains(b, []byte("sha256")) || bytes.Contains(b, []byte("md5")) {
		t.Fatalf("JSON %s names sums the record has not", b)
	}
	if err := json.Unmarshal([]byte(`{"path":"p","sha256":"s"}`), &back); err == nil {
		t.Fatal("a record with a sum that is not hex was read")
	}
}

// A commit whose sum or MD5 is not hex is refused, and changes nothing.
func TestCommitRefusesSumNotHex(t *testing.T) {
	for _, c := range []Command{
		{Sum: "s"},
		{Sum: sumOf("x"), MD5: "not an md5"},
		{Sum: sumOf("x")[1:]},
	} {
		t.Run(c.Sum+c.MD5, func(t *testing.T) {
			h := &metaHarness{t: t, s: NewState()}
			h.addNode("a")
			c.Kind, c.Take, c.Path, c.Node, c.Idem = KindCommit, true, "p", "a", "k"
			h.idx++
			r := h.s.Apply(h.idx, c)
			if !errors.Is(r.Err, ErrBadCommand) || !strings.Contains(r.Err.Error(), "hex") {
				t.Fatalf("commit answered %v, want a bad-command error about hex", r.Err)
			}
			if h.s.File("p") != nil {
				t.Fatal("a refused commit left a record")
			}
			if _, ok := h.s.Idem("k"); ok {
				t.Fatal("a refused commit left its idempotency key")
			}
		})
	}
}

// Binaries before raw sums wrote a sum that was not lowercase hex as a
// string (snapcodec.go): such snapshots still restore, hex in either case
// as the sum, anything else as no sum.
func TestRestoreStringSums(t *testing.T) {
	lower := strings.Repeat("0123456789abcdef", 4)
	cases := []struct {
		name, sum, md5 string
		version        uint64
		wantSum        string
		wantMD5        string
	}{
		{"upper-case hex, version 2", strings.ToUpper(lower), "", snapVersionCore, lower, ""},
		{"upper-case hex MD5, version 4", strings.ToUpper(lower), strings.ToUpper(lower[:32]), snapVersion, lower, lower[:32]},
		{"not hex", "sum", "md5?", snapVersion, "", ""},
		{"too short", lower[:63], lower[:31], snapVersion, "", ""},
		{"empty", "", "", snapVersionCore, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewFSM()
			if err := m.Restore(io.NopCloser(bytes.NewReader(stringSumSnapshot(tc.version, tc.sum, tc.md5)))); err != nil {
				t.Fatal(err)
			}
			f := m.File("p")
			if f == nil || f.Version != 5 || f.BlobID != "b" || f.Sum.String() != tc.wantSum || f.MD5.String() != tc.wantMD5 {
				t.Fatalf("restored %+v, want sum %q MD5 %q", f, tc.wantSum, tc.wantMD5)
			}
		})
	}
}

// stringSumSnapshot is a snapshot, as binaries before raw sums wrote it,
// of one file whose sum (and MD5, version 4) are strings.
func stringSumSnapshot(version uint64, sum, md5 string) []byte {
	var buf bytes.Buffer
	e := &snapWriter{w: bufio.NewWriter(&buf), ids: map[string]uint64{}, sets: map[string]uint64{}}
	e.w.WriteString(snapMagic)
	e.uvarint(version)
	e.uvarint(5) // applied
	e.uvarint(0) // nodes
	e.uvarint(0) // settings
	e.uvarint(1) // files
	e.uvarint(0) // shared prefix
	e.str("p")   // path
	e.uvarint(5) // version
	flags := byte(0)
	if md5 != "" {
		flags |= flagMD5
	}
	e.w.WriteByte(flags)
	e.str("b")  // blob id
	e.varint(1) // size
	e.str(sum)  // sum as a string
	e.time(testTime)
	e.id("")     // holder
	e.uvarint(0) // grant
	e.set(nil)   // unfenced
	e.set(nil)   // valid
	if md5 != "" {
		e.str(md5)
	}
	e.uvarint(0) // idempotency records
	if version >= snapVersionSections {
		e.uvarint(0) // sections
	}
	e.w.WriteString(snapEnd)
	e.w.Flush()
	return buf.Bytes()
}

// Records share attributes that many carry alike, from a commit or a
// restore; those with user metadata or a parts ETag stay their own.
func TestAttrsShared(t *testing.T) {
	m := NewFSM()
	h := &metaHarness{t: t, s: m.state}
	h.addNode("a")
	commit := func(path string, a *Attrs) *File {
		return h.must(Command{Kind: KindCommit, Take: true, Path: path, Node: "a", Sum: sumOf(path), Attrs: a, Time: testTime}).File
	}
	jpeg := func() *Attrs {
		return &Attrs{ContentType: "image/jpeg", Headers: map[string]string{"Cache-Control": "max-age=60"}}
	}
	commit("j1", jpeg())
	commit("j2", jpeg())
	commit("png", &Attrs{ContentType: "image/png", Headers: map[string]string{"Cache-Control": "max-age=60"}})
	commit("u1", &Attrs{ContentType: "image/jpeg", User: map[string]string{"k": "v"}})
	commit("u2", &Attrs{ContentType: "image/jpeg", User: map[string]string{"k": "v"}})
	commit("e1", &Attrs{ContentType: "image/jpeg", PartsETag: `"x-2"`})
	commit("e2", &Attrs{ContentType: "image/jpeg", PartsETag: `"x-2"`})
	m.applied = h.idx
	restored := NewFSM()
	if err := restored.Restore(snapshotTo(t, m).reader()); err != nil {
		t.Fatal(err)
	}
	for name, fsm := range map[string]*FSM{"applied": m, "restored": restored} {
		t.Run(name, func(t *testing.T) {
			same := func(a, b string) bool { return fsm.File(a).Attrs == fsm.File(b).Attrs }
			if !same("j1", "j2") || !fsm.File("j1").Attrs.Equal(jpeg()) {
				t.Fatalf("j1 and j2 do not share %+v", fsm.File("j1").Attrs)
			}
			if same("j1", "png") || fsm.File("png").Attrs.ContentType != "image/png" {
				t.Fatal("different attributes shared")
			}
			if same("u1", "u2") || same("e1", "e2") {
				t.Fatal("user metadata or a parts ETag shared")
			}
		})
	}
}

// The table of shared attributes stays bounded, and shares again once it
// started afresh.
func TestSharedAttrsBounded(t *testing.T) {
	in := newInterner()
	for i := range maxSharedAttrs + 10 {
		in.attrs(&Attrs{ContentType: fmt.Sprint("t/", i)})
		if len(in.attrSet) > maxSharedAttrs {
			t.Fatalf("table holds %d attributes", len(in.attrSet))
		}
	}
	big := strings.Repeat("x", 4<<10)
	for i := range maxSharedAttrsBytes / len(big) * 2 {
		in.attrs(&Attrs{ContentType: fmt.Sprint(i, big)})
		if in.attrBytes > maxSharedAttrsBytes {
			t.Fatalf("table holds %d bytes", in.attrBytes)
		}
	}
	a := in.attrs(&Attrs{ContentType: "text/plain"})
	if b := in.attrs(&Attrs{ContentType: "text/plain"}); a != b {
		t.Fatal("not shared after the table started afresh")
	}
}

func mustSHA256(t *testing.T, s string) SHA256 {
	t.Helper()
	d, err := ParseSHA256(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustMD5(t *testing.T, s string) MD5 {
	t.Helper()
	d, err := ParseMD5(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A record stays in Go's 176-byte size class: the catalogue holds one per
// file, and the next class costs 16 bytes more for each of millions
// (docs/benchmarks.md, "Catalogue scale"). A new field must find room, or
// the budget be measured again with BenchmarkCatalogueScale.
func TestFileRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(File{}); n > 176 {
		t.Fatalf("meta.File is %d bytes, over the 176-byte size class", n)
	}
}
