package meta

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Fuzz targets of the meta package. Run one at a time, e.g.
//
//	go test ./internal/meta -run XXX -fuzz '^FuzzDecodeCommand$' -fuzztime 1000000x -parallel=1
//
// Without -fuzz they run their seed corpus as ordinary unit tests. The
// helpers here are prefixed "fz" so they do not collide with helpers of
// other test files.

var fzTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// fzState returns a small state built through Apply: three nodes (n1, n2
// active, n3 left) and a few files in different conditions. It returns the
// state and the next free raft index.
func fzState(t testing.TB) (*State, uint64) {
	t.Helper()
	s := NewState()
	idx := uint64(0)
	must := func(c Command) *Result {
		t.Helper()
		idx++
		r := s.Apply(idx, c)
		if r.Err != nil {
			t.Fatalf("building the fuzz state: apply %+v: %v", c, r.Err)
		}
		return r
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		must(Command{Kind: KindNodeUpsert, Info: &Node{ID: id, PeerAddr: id + ":7000", HTTPAddr: id + ":8000", State: NodeActive, Since: fzTime}})
	}
	must(Command{Kind: KindNodeUpsert, Info: &Node{ID: "n3", State: NodeLeft, Since: fzTime}})
	write := func(path, node string, release bool) {
		g := must(Command{Kind: KindAcquire, Path: path, Node: node}).File.Grant
		must(Command{Kind: KindCommit, Path: path, Node: node, Grant: g, BlobID: "blob" + strconv.FormatUint(idx, 10),
			Size: int64(len(path)), Sum: sumOf("sum"), Time: fzTime, Standby: []string{"n2"}, Idem: "idem-" + path})
		if release {
			must(Command{Kind: KindRelease, Path: path, Node: node, Grant: g})
		}
	}
	write("a", "n1", true)    // replicated, valid on n1 and n2
	write("a/b", "n1", false) // suspended: n1 holds the right
	write("gone", "n2", true) // then deleted below
	must(Command{Kind: KindDelete, Path: "gone", Node: "n2", Idem: "del"})
	must(Command{Kind: KindAcquire, Path: "new", Node: "n2"}) // held, never committed
	return s, idx + 1
}

// fzCheckState checks invariants every state must keep whatever was applied.
func fzCheckState(t *testing.T, s *State) {
	t.Helper()
	var live, susp int
	prev := ""
	first := true
	s.Walk(func(f *File) bool {
		if !first && f.Path <= prev {
			t.Fatalf("Walk out of order: %q after %q", f.Path, prev)
		}
		first, prev = false, f.Path
		if f.Exists() {
			live++
		}
		if f.Suspended() {
			susp++
		}
		if !slices.IsSorted(f.Valid) || len(slices.Compact(slices.Clone(f.Valid))) != len(f.Valid) {
			t.Fatalf("%q: valid set %q not sorted and unique (IsValidOn relies on it)", f.Path, f.Valid)
		}
		return true
	})
	if gl, gs := s.Counts(); gl != live || gs != susp {
		t.Fatalf("Counts() = (%d, %d), brute force gives (%d, %d)", gl, gs, live, susp)
	}
}

// fzNormCommand makes two decodings of the same command comparable with
// reflect.DeepEqual: times are compared with Equal (the location pointer of
// a parsed offset differs between parses) and an empty Standby list is the
// same as none (omitempty drops it on Encode).
func fzNormCommand(t *testing.T, a, b *Command) {
	t.Helper()
	if !a.Time.Equal(b.Time) {
		t.Fatalf("Time %v became %v", a.Time, b.Time)
	}
	a.Time, b.Time = time.Time{}, time.Time{}
	if a.Info != nil && b.Info != nil {
		ai, bi := *a.Info, *b.Info
		if !ai.Since.Equal(bi.Since) {
			t.Fatalf("Info.Since %v became %v", ai.Since, bi.Since)
		}
		ai.Since, bi.Since = time.Time{}, time.Time{}
		a.Info, b.Info = &ai, &bi
	}
	for _, c := range []*Command{a, b} {
		if len(c.Standby) == 0 {
			c.Standby = nil
		}
	}
}

// fzKnownBadTime is the input that found a bug (fixed: DecodeCommand now
// keeps times in UTC): a zone offset that decoded but did not encode again.
const fzKnownBadTime = `{"time":"0001-01-01T00:00:00+24:00"}`

// The seeds refer to fzState's records: "a" at version 6, "a/b" at
// version 9 held by n1 with grant 8, "gone" deleted at 13, "new" held by n2
// with grant 14 and never committed.
func FuzzDecodeCommand(f *testing.F) {
	seeds := []Command{
		{Kind: KindAcquire, Path: "a/b", Node: "n2", Force: true},
		{Kind: KindAcquire, Path: "fresh", Node: "n1"},
		{Kind: KindCommit, Path: "a/b", Node: "n1", Grant: 8, BlobID: "b", Size: 3, Sum: sumOf("s"), Time: fzTime,
			Standby: []string{"n2", "n3", "zz", "n2"}, Cond: Cond{IfMatch: 9}, Idem: "k"},
		{Kind: KindCommit, Path: "a/b", Node: "n1", Grant: 8, Idem: "idem-a/b"},
		{Kind: KindCommit, Path: "new", Node: "n2", Grant: 14, Cond: Cond{IfNoneMatch: true}},
		{Kind: KindRelease, Path: "a/b", Node: "n1", Grant: 8},
		{Kind: KindReplica, Path: "a", Node: "n3", Version: 6},
		{Kind: KindReplica, Path: "a", Node: "n1", Version: 6},
		{Kind: KindReplica, Path: "a/b", Node: "n2", Version: 9},
		{Kind: KindDrop, Path: "a", Node: "n2", Version: 6},
		{Kind: KindDrop, Path: "a/b", Node: "n1", Version: 9},
		{Kind: KindDelete, Path: "a", Node: "n1", Cond: Cond{IfMatch: 6}, Idem: "x"},
		{Kind: KindDelete, Path: "a/b", Node: "n2", Force: true},
		{Kind: KindDelete, Path: "gone", Node: "n2", Idem: "del"},
		{Kind: KindSetConfig, Key: CfgReplication, Value: "2"},
		{Kind: KindSetConfig, Key: CfgResumeIdle, Value: "-1s"},
		{Kind: KindNodeUpsert, Info: &Node{ID: "n4", State: NodeActive, Since: fzTime}},
		{Kind: KindNodeUpsert, Info: &Node{ID: ""}},
		{Kind: KindNodeRemove, Node: "n1", Time: fzTime},
		{Kind: KindNodeRemove, Node: "nobody"},
	}
	for _, c := range seeds {
		b, err := c.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		if b, ok, err := c.EncodeBinary(); ok && err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{binTag})
	f.Add([]byte{binTag, binFormat, binTime, 1, 'p', 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0})
	for _, s := range []string{
		"", "null", "{}", "{", "[1]", `{"kind":5}`, `{"kind":"acquire","path":"\ud800","node":"n1"}`,
		`{"kind":"commit","time":"2024-01-01T00:00:00.123456789+05:30","size":-1}`,
		`{"kind":"node_upsert","info":{"id":"n9","state":"bogus","since":"0000-01-01T00:00:00-23:59"}}`,
		`{"KIND":"delete","Path":"a","path":"gone","standby":[]}`,
		`{"kind":"commit","time":"10000-01-01T00:00:00Z"}`, "{\"kind\":\"acquire\",\"path\":\"\xff\",\"node\":\"n1\"}",
		`{"kind":"commit","time":"2024-01-01T00:00:00+00:60"}`, `{"kind":"commit","time":"2024-01-01T0:00:00,5Z"}`,
		fzKnownBadTime,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil {
			if !errors.Is(err, ErrBadCommand) {
				t.Fatalf("DecodeCommand error %v does not wrap ErrBadCommand", err)
			}
			return
		}
		// Round trip: what was decoded must encode and decode to itself,
		// in the encoding it came in (a binary Commit's strings are raw
		// bytes, which JSON would make valid UTF-8); and a Commit read
		// from JSON in binary too.
		enc, err := c.Encode()
		if err != nil {
			t.Fatalf("decoded command %+v does not encode: %v", c, err)
		}
		benc, ok, err := c.EncodeBinary()
		if err != nil || b[0] == binTag && !ok {
			t.Fatalf("decoded command %+v does not encode in binary: %v, %v", c, ok, err)
		}
		if ok {
			c2, err := DecodeCommand(benc)
			if err != nil {
				t.Fatalf("re-decoding binary %q: %v", benc, err)
			}
			a, b2 := c, c2
			fzNormCommand(t, &a, &b2)
			if !reflect.DeepEqual(a, b2) {
				t.Fatalf("binary round trip changed the command:\n  in  %q\n  1st %+v\n  enc %q\n  2nd %+v", b, c, benc, c2)
			}
		}
		if b[0] == binTag {
			enc = benc
		}
		c2, err := DecodeCommand(enc)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		a, b2 := c, c2
		fzNormCommand(t, &a, &b2)
		if !reflect.DeepEqual(a, b2) {
			t.Fatalf("round trip changed the command:\n  in  %q\n  1st %+v\n  enc %s\n  2nd %+v", b, c, enc, c2)
		}

		// Apply must not panic, must report its index and must keep the
		// state's invariants; applying the same command again must too.
		s, idx := fzState(t)
		for i := range uint64(2) {
			r := s.Apply(idx+i, c)
			if r == nil || r.Index != idx+i {
				t.Fatalf("Apply(%d) returned %+v", idx+i, r)
			}
			if r.Err == nil && r.File != nil && r.File.Path != c.Path {
				t.Fatalf("Apply of %q returned the record of %q", c.Path, r.File.Path)
			}
			fzCheckState(t, s)
			r.Wire()
		}
	})
}

// fzParseETagRef is the rule of ParseETag written independently: an
// optional W/, optional surrounding double quotes, then a non-zero
// unsigned decimal that fits 64 bits.
func fzParseETagRef(tag string) (uint64, bool) {
	if len(tag) >= 2 && tag[:2] == "W/" {
		tag = tag[2:]
	}
	if len(tag) >= 2 && tag[0] == '"' && tag[len(tag)-1] == '"' {
		tag = tag[1 : len(tag)-1]
	}
	if tag == "" {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, false // overflow
		}
		v = v*10 + d
	}
	return v, v > 0
}

func FuzzParseETag(f *testing.F) {
	for _, s := range []string{
		`"1"`, `"18446744073709551615"`, `"18446744073709551616"`, `W/"7"`, `7`, `W/7`, `"0"`, `""`, `"`,
		`"1`, `1"`, `'1'`, `"-1"`, `"+1"`, `"0x1f"`, `"1_0"`, `"007"`, `W/W/"1"`, `w/"1"`, `*`, ` "1" `, `""1""`, "\"\u0661\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := ParseETag(s)
		rv, rok := fzParseETagRef(s)
		if ok != rok || (ok && v != rv) {
			t.Fatalf("ParseETag(%q) = %d, %v; the reference rule gives %d, %v", s, v, ok, rv, rok)
		}
		if !ok {
			return
		}
		if v == 0 {
			t.Fatalf("ParseETag(%q) accepted version 0", s)
		}
		tag := ETagOf(v)
		if tag != `"`+strconv.FormatUint(v, 10)+`"` {
			t.Fatalf("ETagOf(%d) = %q", v, tag)
		}
		for _, form := range []string{tag, "W/" + tag} {
			if v2, ok2 := ParseETag(form); !ok2 || v2 != v {
				t.Fatalf("ParseETag(%q) = %d, %v; want %d (from %q)", form, v2, ok2, v, s)
			}
		}
	})
}

// fzListPaths is the fixed catalogue of FuzzListCursor: paths that share
// prefixes, contain the usual delimiters, the largest rune, and look like
// cursors.
var fzListPaths = []string{
	"a", "a/b", "a/b/c", "a/c", "a-b", "a/\U0010FFFF/x", "a/\U0010FFFF", "ab", "b/x", "b/y", "b/y/z",
	"p:z", "f:y", "é/1", "é/2", "x y/z", "zz",
}

// fzListState builds the catalogue: every path written, then some deleted
// (tombstones), some held again (still listed), and one path acquired but
// never committed (not listed).
func fzListState(t testing.TB) *State {
	t.Helper()
	s := NewState()
	idx := uint64(0)
	must := func(c Command) *Result {
		t.Helper()
		idx++
		r := s.Apply(idx, c)
		if r.Err != nil {
			t.Fatalf("building the list catalogue: apply %+v: %v", c, r.Err)
		}
		return r
	}
	must(Command{Kind: KindNodeUpsert, Info: &Node{ID: "n", State: NodeActive, Since: fzTime}})
	for _, p := range fzListPaths {
		g := must(Command{Kind: KindAcquire, Path: p, Node: "n"}).File.Grant
		must(Command{Kind: KindCommit, Path: p, Node: "n", Grant: g, Time: fzTime})
		must(Command{Kind: KindRelease, Path: p, Node: "n", Grant: g})
	}
	for _, p := range []string{"a/c", "b/y", "é/2"} {
		must(Command{Kind: KindDelete, Path: p, Node: "n"})
	}
	for _, p := range []string{"a/b", "zz"} {
		must(Command{Kind: KindAcquire, Path: p, Node: "n"})
	}
	must(Command{Kind: KindAcquire, Path: "a/never", Node: "n"})
	return s
}

// fzListRef is the reference listing of FuzzListCursor, written from the
// documentation of List: live paths under prefix, after the cursor ("f:"
// + path: after that path; "p:" + prefix: after every path under it; else
// a plain path), collapsed at the first delimiter after the prefix.
func fzListRef(s *State, prefix, delim, cursor string) []string {
	var skipUnder, after string
	switch {
	case strings.HasPrefix(cursor, "p:"):
		skipUnder = cursor[2:]
	case strings.HasPrefix(cursor, "f:"):
		after = cursor[2:]
	default:
		after = cursor
	}
	var out []string
	s.Walk(func(f *File) bool {
		p := f.Path
		if !f.Exists() || !strings.HasPrefix(p, prefix) || p <= after {
			return true
		}
		if skipUnder != "" && (p < skipUnder || strings.HasPrefix(p, skipUnder)) {
			return true
		}
		k := "F" + p
		if delim != "" {
			if i := strings.Index(p[len(prefix):], delim); i >= 0 {
				k = "P" + p[:len(prefix)+i+len(delim)]
			}
		}
		if len(out) > 0 && out[len(out)-1] == k {
			return true
		}
		out = append(out, k)
		return true
	})
	return out
}

func FuzzListCursor(f *testing.F) {
	for _, c := range []struct {
		prefix, delim, cursor string
		limit                 int
	}{
		{"", "", "", 0}, {"", "/", "", 1}, {"", "/", "", 2}, {"a", "/", "", 1}, {"a/", "/", "", 1},
		{"", "/", "p:a/", 3}, {"", "/", "f:a/b", 1}, {"", "", "a/b", 2}, {"", "/", "p:", 1}, {"", "/", "f:", 1},
		{"a/", "/", "p:a/\U0010FFFF/", 1}, {"", "\U0010FFFF", "", 1}, {"é", "/", "", 1}, {"", "a", "", 1},
		{"", "//", "", 1}, {"", "/", "p:zzz", 5}, {"b", "", "p:a", 1}, {"", "/", "zz", -3}, {"zzz", "/", "", 1},
		{"", "p", "", 1}, {"", ":", "", 1}, {"a", "", "f:\xff", 1},
	} {
		f.Add(c.prefix, c.delim, c.cursor, c.limit)
	}
	s := fzListState(f)
	live, _ := s.Counts()
	f.Fuzz(func(t *testing.T, prefix, delim, cursor string, limit int) {
		eff := limit
		if eff <= 0 {
			eff = 1000
		}
		want := fzListRef(s, prefix, delim, cursor)
		var got []string
		cur := cursor
		for page := 0; ; page++ {
			if page > live {
				t.Fatalf("List(%q, %q, %q, %d): more than %d pages (live files + 1); cursor now %q, got so far %q",
					prefix, delim, cursor, limit, live+1, cur, got)
			}
			es, next := s.List(prefix, delim, cur, limit)
			if len(es) > eff {
				t.Fatalf("page of %d entries, limit %d", len(es), eff)
			}
			if next != "" && len(es) != eff {
				t.Fatalf("short page (%d < %d) with a next cursor %q", len(es), eff, next)
			}
			for _, e := range es {
				switch {
				case e.File != nil && e.Prefix != "":
					t.Fatalf("entry with both a file %q and a prefix %q", e.File.Path, e.Prefix)
				case e.File != nil:
					if !e.File.Exists() {
						t.Fatalf("listed a file that is not live: %+v", e.File)
					}
					if !strings.HasPrefix(e.File.Path, prefix) {
						t.Fatalf("listed %q, which lacks the prefix %q", e.File.Path, prefix)
					}
					got = append(got, "F"+e.File.Path)
				default:
					if !strings.HasPrefix(e.Prefix, prefix) || delim == "" || !strings.HasSuffix(e.Prefix, delim) {
						t.Fatalf("common prefix %q does not extend %q up to the delimiter %q", e.Prefix, prefix, delim)
					}
					got = append(got, "P"+e.Prefix)
				}
			}
			if next == "" {
				break
			}
			cur = next
		}
		for i := 1; i < len(got); i++ {
			if got[i][1:] <= got[i-1][1:] {
				t.Fatalf("List(%q, %q, %q, %d): entries not sorted and unique: %q then %q (all: %q)",
					prefix, delim, cursor, limit, got[i-1], got[i], got)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("List(%q, %q, %q, %d) paged through:\n got %q\nwant %q", prefix, delim, cursor, limit, got, want)
		}
	})
}
