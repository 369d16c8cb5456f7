package bench

import (
	"bytes"
	"io"
	"slices"
	"testing"
)

func TestParseSizes(t *testing.T) {
	got, err := ParseSizes("1K,4k, 16KB,64KiB,256K,1M,4M")
	if err != nil || !slices.Equal(got, DefaultSizes) {
		t.Fatalf("%v %v", got, err)
	}
	for s, want := range map[string]int64{"100": 100, "100B": 100, "1G": 1 << 30, "1536": 1536, "2MiB": 2 << 20} {
		if n, err := ParseSize(s); err != nil || n != want {
			t.Errorf("%q: %d %v", s, n, err)
		}
	}
	for _, s := range []string{"", "0", "-1K", "K", "1X", "2G", "1.5M", ","} {
		if _, err := ParseSizes(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	for n, want := range map[int64]string{1024: "1K", 1536: "1536", 4 << 20: "4M", 1 << 30: "1G", 7: "7"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q", n, got)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Errorf("round trip %d: %d %v", n, back, err)
		}
	}
}

func TestVersionedBody(t *testing.T) {
	base := fillRandom(1000, 1)
	orig := bytes.Clone(base)
	a, _ := io.ReadAll(newVersionedBody(base, 1))
	b := newVersionedBody(base, 2)
	small := make([]byte, 3)
	b.Read(small) // partial read, then rewind as a redirect would
	if _, err := b.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	bb, _ := io.ReadAll(b)
	if len(a) != 1000 || len(bb) != 1000 || bytes.Equal(a, bb) || !bytes.Equal(a[8:], base[8:]) || !bytes.Equal(base, orig) {
		t.Fatal("content")
	}
	tiny, _ := io.ReadAll(newVersionedBody([]byte{9, 9, 9}, 5))
	if !bytes.Equal(tiny, []byte{5, 0, 0}) {
		t.Fatalf("tiny %v", tiny)
	}
	if !bytes.Equal(fillRandom(64, 3), fillRandom(64, 3)) || bytes.Equal(fillRandom(64, 3), fillRandom(64, 4)) {
		t.Fatal("fillRandom not a function of its seed")
	}
}
