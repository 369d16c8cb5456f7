package files

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// A write's attributes and the content's MD5 are kept with the version
// and answered by every read, listing and copy, on any node; the next
// write replaces them.
func TestAttrsKeptWithTheVersion(t *testing.T) {
	ctx := context.Background()
	c := newFakeCluster(t, "a", "b", "c")
	attrs := Attrs{ContentType: "text/plain; charset=utf-8",
		Headers: map[string]string{"Cache-Control": "max-age=60", "Content-Language": "fr"},
		User:    map[string]string{"colour": "bleu", "{DAV:}displayname": "Été\n2026"}}
	if _, err := c.put("a", "f", "hello", PutOptions{Attrs: attrs}); err != nil {
		t.Fatal(err)
	}
	out := c.outsider(t, "f")
	fw := Forwarding{Forward: true}
	check := func(t *testing.T, what string, info Info, want Attrs, content string) {
		t.Helper()
		if info.MD5 != md5Hex(content) || !reflect.DeepEqual(info.Attrs, want) {
			t.Fatalf("%s: MD5 %q attrs %+v; want %q %+v", what, info.MD5, info.Attrs, md5Hex(content), want)
		}
	}
	t.Run("read here and forwarded", func(t *testing.T) {
		for _, id := range []string{"a", out} {
			_, rd, err := c.read(id, "f", OpenOptions{Forwarding: fw})
			if err != nil {
				t.Fatal(err)
			}
			check(t, "read on "+id, rd.Info(), attrs, "hello")
		}
	})
	t.Run("listing", func(t *testing.T) {
		page, err := c.svcs["b"].List(ctx, ListOptions{Consistent: true})
		if err != nil || len(page.Files) != 1 {
			t.Fatalf("%+v, %v", page, err)
		}
		check(t, "listing", page.Files[0], attrs, "hello")
	})
	t.Run("an Info is the caller's to change", func(t *testing.T) {
		_, rd, _ := c.read("a", "f", OpenOptions{})
		rd.Info().User["colour"] = "rouge"
		_, rd, _ = c.read("a", "f", OpenOptions{})
		check(t, "read after changing an Info", rd.Info(), attrs, "hello")
	})
	t.Run("copy keeps them, or replaces them", func(t *testing.T) {
		if _, err := c.svcs[out].Copy(ctx, "f", "kept", CopyOptions{Forwarding: fw}); err != nil {
			t.Fatal(err)
		}
		repl := Attrs{ContentType: "image/png"}
		if _, err := c.svcs[out].Copy(ctx, "f", "replaced", CopyOptions{Forwarding: fw, Attrs: &repl}); err != nil {
			t.Fatal(err)
		}
		_, rd, _ := c.read("a", "kept", OpenOptions{Forwarding: fw})
		check(t, "copy", rd.Info(), attrs, "hello")
		_, rd, _ = c.read("a", "replaced", OpenOptions{Forwarding: fw})
		check(t, "copy replacing", rd.Info(), repl, "hello")
	})
	t.Run("a forwarded write carries them; the next write replaces them", func(t *testing.T) {
		next := Attrs{User: map[string]string{"n": "2"}}
		if _, err := c.put(out, "f", "again", PutOptions{Forwarding: fw, Attrs: next}); err != nil || c.forwarded("write") == 0 {
			t.Fatalf("%v, %d forwards", err, c.forwarded("write"))
		}
		_, rd, _ := c.read("a", "f", OpenOptions{})
		check(t, "after a forwarded write", rd.Info(), next, "again")
		if _, err := c.put("a", "f", "bare", PutOptions{}); err != nil {
			t.Fatal(err)
		}
		_, rd, _ = c.read("a", "f", OpenOptions{})
		check(t, "after a write without", rd.Info(), Attrs{}, "bare")
	})
}

// Attributes the catalogue cannot keep are refused before the body is
// read, and nothing is written.
func TestBadAttrsRefused(t *testing.T) {
	c := newFakeCluster(t, "a")
	cases := map[string]Attrs{
		"too large":            {User: map[string]string{"k": strings.Repeat("v", MaxAttrs)}},
		"not a header kept":    {Headers: map[string]string{"X-Custom": "1"}},
		"header not canonical": {Headers: map[string]string{"cache-control": "1"}},
		"header with a CRLF":   {Headers: map[string]string{"Expires": "a\r\nSet-Cookie: x"}},
		"empty user name":      {User: map[string]string{"": "v"}},
		"user name with a tab": {User: map[string]string{"a\tb": "v"}},
		"value not UTF-8":      {User: map[string]string{"k": "\xff"}},
		"content type CR":      {ContentType: "text/plain\r"},
	}
	for name, a := range cases {
		t.Run(name, func(t *testing.T) {
			body := &countingReader{r: strings.NewReader("x")}
			_, err := c.svcs["a"].Put(context.Background(), "f", body, PutOptions{Size: 1, Attrs: a})
			if !errors.Is(err, ErrBadRequest) || body.read != 0 || c.fsms["a"].File("f") != nil {
				t.Fatalf("got %v, %d bytes read; want ErrBadRequest, body unread, nothing written", err, body.read)
			}
		})
	}
}

// While a voter is older than core v3 (an upgrade), a write without
// attributes is kept without its MD5, and one with attributes is refused
// with a message saying why; nothing is written.
func TestAttrsNeedCoreV3(t *testing.T) {
	for _, noTake := range []bool{false, true} {
		c := newFakeCluster(t, "a", "b")
		c.noV3, c.noTake = true, noTake
		info, err := c.put("a", "plain", "x", PutOptions{})
		if err != nil || info.MD5 != "" || !c.fsms["b"].File("plain").Exists() {
			t.Fatalf("write without attributes: %+v, %v", info, err)
		}
		_, err = c.put("a", "typed", "x", PutOptions{Attrs: Attrs{ContentType: "a/b"}})
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "core v3") || c.fsms["b"].File("typed").Exists() {
			t.Fatalf("write with attributes: %v; want ErrUnavailable naming core v3, nothing written", err)
		}
	}
}
