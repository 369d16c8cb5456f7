package meta

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
)

// A commit's MD5 and attributes (core v3) are kept with its version,
// replaced by the next commit and dropped by a delete.
func TestCommitKeepsMD5AndAttrs(t *testing.T) {
	h := &metaHarness{t: t, s: NewState()}
	h.addNode("a")
	attrs := &Attrs{ContentType: "text/plain", Headers: map[string]string{"Cache-Control": "no-cache"}, User: map[string]string{"colour": "blue"}}
	commit := func(md5 string, a *Attrs) *File {
		return h.must(Command{Kind: KindCommit, Take: true, Path: "p", Node: "a", BlobID: "b", Size: 1, Sum: sumOf("s"), MD5: md5, Attrs: a, Time: testTime}).File
	}
	steps := []struct {
		name  string
		apply func() *File
		md5   string
		attrs *Attrs
	}{
		{"with both", func() *File { return commit("0123456789abcdef0123456789abcdef", attrs) }, "0123456789abcdef0123456789abcdef", attrs},
		{"the next commit replaces them", func() *File { return commit("ffffffffffffffffffffffffffffffff", nil) }, "ffffffffffffffffffffffffffffffff", nil},
		{"empty attributes are none", func() *File { return commit("", &Attrs{User: map[string]string{}}) }, "", nil},
		{"empty maps are dropped", func() *File {
			return commit("", &Attrs{ContentType: "a/b", User: map[string]string{}})
		}, "", &Attrs{ContentType: "a/b"}},
		{"a delete drops them", func() *File {
			commit("0123456789abcdef0123456789abcdef", attrs)
			return h.must(Command{Kind: KindDelete, Path: "p", Node: "a"}).File
		}, "", nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			f := st.apply()
			if f.MD5.String() != st.md5 || !reflect.DeepEqual(f.Attrs, st.attrs) {
				t.Fatalf("record has MD5 %q attrs %+v, want %q %+v", f.MD5, f.Attrs, st.md5, st.attrs)
			}
		})
	}
}

// A snapshot is written in the oldest format that holds it: version 4
// only when a file has an MD5 or attributes, which then survive.
func TestSnapshotFormatOfAttrs(t *testing.T) {
	md5 := MD5{0x01, 0x23, 0x45, 15: 0xef}
	cases := []struct {
		name  string
		files []*File
		want  uint64
	}{
		{"no MD5 nor attributes", []*File{{Path: "a", Version: 1}}, snapVersionCore},
		{"a hex MD5", []*File{{Path: "a", Version: 1}, {Path: "b", Version: 2, MD5: md5}}, snapVersion},
		{"attributes", []*File{{Path: "a", Version: 1, MD5: md5, Attrs: &Attrs{ContentType: "image/png",
			Headers: map[string]string{"Content-Language": "fr", "Expires": "never"}, User: map[string]string{"k": "v\nw", "é": ""},
			PartsETag: `"abc-2"`}}}, snapVersion},
		{"attributes without maps", []*File{{Path: "a", Version: 1, Attrs: &Attrs{PartsETag: "x"}}}, snapVersion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewFSM()
			for _, f := range tc.files {
				m.state.put(f)
			}
			m.applied = 3
			b := snapshotTo(t, m).Bytes()
			if v := b[len(snapMagic)]; uint64(v) != tc.want {
				t.Fatalf("format version %d, want %d", v, tc.want)
			}
			m2 := NewFSM()
			if err := m2.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.files {
				if got := m2.File(want.Path); !reflect.DeepEqual(normFile(t, got), normFile(t, want)) {
					t.Fatalf("record\n%+v\nrestored as\n%+v", want, got)
				}
			}
		})
	}
}

// A version 2 or 3 snapshot whose file carries a version 4 flag is
// refused, not misread.
func TestSnapshotV4FlagInOlderFormat(t *testing.T) {
	m := NewFSM()
	m.state.put(&File{Path: "a", Version: 1, MD5: MD5{1}})
	b := snapshotTo(t, m).Bytes()
	b[len(snapMagic)] = snapVersionCore
	err := NewFSM().Restore(io.NopCloser(bytes.NewReader(b)))
	if err == nil || !strings.Contains(err.Error(), "flags") {
		t.Fatalf("restore: %v, want a refusal naming the flags", err)
	}
}
