package meta

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// A Commit in binary decodes to the command it was, and applies exactly
// as the same command in JSON does.
func TestBinaryCommit(t *testing.T) {
	at := time.Date(2026, 11, 26, 2, 10, 0, 123456789, time.UTC)
	for _, c := range []Command{
		{Kind: KindCommit, Take: true, Path: "put/1-2-3", Node: "n1", BlobID: "b1", Size: 4096, Sum: sumOf("x"), MD5: "0cc175b9c0f1b6a831c399e269772661", Time: at, Idem: "k1"},
		{Kind: KindCommit, Path: "a/b", Node: "n1", Grant: 8, BlobID: "b", Size: 3, Sum: sumOf("s"), Time: at.In(time.FixedZone("x", 3600)),
			Standby: []string{"n2", "n3"}, Cond: Cond{IfMatch: 9}},
		{Kind: KindCommit, Path: "new", Node: "n2", Grant: 14, Cond: Cond{IfNoneMatch: true}, Size: -1},
		{Kind: KindCommit, Take: true, Path: "typed", Node: "n1", BlobID: "c", Time: at,
			Attrs: &Attrs{ContentType: "text/plain", Headers: map[string]string{"Cache-Control": "no-cache"}, User: map[string]string{"k": "v"}}},
		{Kind: KindCommit, Path: "\xff not utf-8", Node: "n1"},
	} {
		b, ok, err := c.EncodeBinary()
		if err != nil || !ok || b[0] != binTag {
			t.Fatalf("EncodeBinary(%+v) = %q, %v, %v", c, b, ok, err)
		}
		got, err := DecodeCommand(b)
		if err != nil {
			t.Fatalf("DecodeCommand(%q): %v", b, err)
		}
		want := c
		want.Time = want.Time.UTC()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("binary round trip:\n got %+v\nwant %+v", got, want)
		}
		js, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		fromJSON, err := DecodeCommand(js)
		if err != nil {
			t.Fatal(err)
		}
		sb, _ := fzState(t)
		sj, idx := fzState(t)
		rb, rj := sb.Apply(idx, got), sj.Apply(idx, fromJSON)
		if c.Path != "\xff not utf-8" && (!reflect.DeepEqual(rb, rj) || !reflect.DeepEqual(sb.File(c.Path), sj.File(c.Path))) {
			t.Errorf("%s: applied from binary %+v (%+v), from JSON %+v (%+v)", c.Path, rb, sb.File(c.Path), rj, sj.File(c.Path))
		}
	}
}

// Commands other than a Commit, and a Commit using fields a Commit does
// not, stay in JSON.
func TestBinaryOnlyCommits(t *testing.T) {
	for _, c := range []Command{
		{Kind: KindAcquire, Path: "a", Node: "n1"},
		{Kind: KindSettles, Items: []Item{{Path: "a", Version: 2}}},
		{Kind: KindCommit, Path: "a", Node: "n1", Force: true},
		{Kind: KindCommit, Path: "a", Node: "n1", Items: []Item{{Path: "b"}}},
	} {
		if b, ok, err := c.EncodeBinary(); ok || err != nil || b != nil {
			t.Errorf("EncodeBinary(%+v) = %q, %v, %v; want JSON", c, b, ok, err)
		}
	}
}

// A damaged binary entry is refused (ErrBadCommand), never half read.
func TestBinaryCommitRefused(t *testing.T) {
	enc := func(c Command) []byte {
		b, ok, err := c.EncodeBinary()
		if !ok || err != nil {
			t.Fatalf("EncodeBinary(%+v): %v, %v", c, ok, err)
		}
		return b
	}
	b := enc(Command{Kind: KindCommit, Take: true, Path: "p", Node: "n1", BlobID: "b", Size: 5, Time: time.Unix(1, 2), Standby: []string{"n2"}})
	for name, bad := range map[string][]byte{
		"tag only":      {binTag},
		"format":        append([]byte{binTag, 9}, b[2:]...),
		"flags":         append([]byte{binTag, binFormat, 0x40}, b[3:]...),
		"trailing byte": append(append([]byte{}, b...), 0),
		"standby count": append(append([]byte{}, b[:len(b)-4]...), 0xff, 0xff, 0xff, 0x0f),
		"year 10000":    enc(Command{Kind: KindCommit, Path: "p", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}),
		"attrs":         append(append([]byte{binTag, binFormat, binAttrs}, enc(Command{Kind: KindCommit})[3:]...), 1, '{'),
	} {
		if _, err := DecodeCommand(bad); !errors.Is(err, ErrBadCommand) {
			t.Errorf("%s %q: err = %v, want ErrBadCommand", name, bad, err)
		}
	}
	for cut := 1; cut < len(b); cut++ {
		if _, err := DecodeCommand(b[:cut]); !errors.Is(err, ErrBadCommand) {
			t.Errorf("cut at %d of %d: err = %v, want ErrBadCommand", cut, len(b), err)
		}
	}
}
