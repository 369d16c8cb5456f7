package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
)

// sectionBytes reads b's content through its Section (the segment file at
// the content's offset, as sendfile does); nil when b has no section.
func sectionBytes(t *testing.T, b *Blob) []byte {
	t.Helper()
	f, off := b.Section()
	if f == nil {
		return nil
	}
	got := make([]byte, b.Size())
	if _, err := f.ReadAt(got, off); err != nil {
		t.Fatalf("ReadAt(%d) of the section: %v", off, err)
	}
	return got
}

// A small blob of more than SectionMin bytes that misses the memory cache
// is served from its segment file at its offset, unread (decision 0053);
// at its second miss it is read into the cache (the doorkeeper), and
// served from memory afterwards. Without a cache it is always served from
// its segment. Smaller blobs are served from memory, larger ones from a
// file of their own. Every way of reading gives the same bytes, across a
// restart too.
func TestSectionBlobs(t *testing.T) {
	sizes := []int{1, SectionMin - 1, SectionMin, SectionMin + 1, 32 << 10, defaultSmallMax - 1, defaultSmallMax, defaultSmallMax + 1}
	for _, cache := range []int64{0, 8 << 20} {
		dir := t.TempDir()
		opts := Options{NoSync: true, CacheBytes: cache}
		s := openStore(t, dir, opts)
		for i, n := range sizes {
			put(t, s, fmt.Sprintf("p%d", n), "v", content(n, uint64(i)))
		}
		for round := range 2 {
			for i, n := range sizes {
				t.Run(fmt.Sprintf("cache%d/round%d/%d", cache, round, n), func(t *testing.T) {
					p, data := fmt.Sprintf("p%d", n), content(n, uint64(i))
					sectioned := n > SectionMin && n <= defaultSmallMax
					for open := range 3 {
						b, err := s.Open(p, "v")
						if err != nil {
							t.Fatal(err)
						}
						got := sectionBytes(t, b)
						wantSection := sectioned && (cache == 0 || open == 0)
						switch {
						case wantSection && !bytes.Equal(got, data):
							t.Errorf("open %d: section: %d bytes, want the %d committed", open, len(got), n)
						case !wantSection && got != nil:
							t.Errorf("open %d: a blob of %d bytes has a section", open, n)
						case wantSection && (b.Bytes() != nil || b.File() != nil):
							t.Errorf("open %d: a sectioned blob also has Bytes or File", open)
						case cache > 0 && n <= defaultSmallMax && !wantSection && !bytes.Equal(b.Bytes(), data):
							t.Errorf("open %d: a cached blob's Bytes: %d bytes, want the %d committed", open, len(b.Bytes()), n)
						}
						b.Close()
					}
					if got := readAll(t, s, p, "v"); !bytes.Equal(got, data) {
						t.Errorf("Read: %d bytes differ from the committed %d", len(got), n)
					}
					checkSeekReadAt(t, s, p, "v", data)
				})
			}
			s = reopen(t, s, dir, opts)
		}
	}
}

// A blob read from a segment keeps the segment's file open while
// compaction moves the blob and deletes the file: the open blob reads its
// bytes to the end, its Close closes the (unlinked) file, and the blob is
// read from its new place afterwards.
func TestSectionOutlivesCompaction(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{NoSync: true})
	s.log.max = 256 << 10 // seven 32 KiB records a segment
	const n = 32 << 10
	for i := range 32 {
		put(t, s, fmt.Sprintf("p%d", i), "v", content(n, uint64(i)))
	}
	b, err := s.Open("p0", "v")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := b.Section()
	if f == nil {
		t.Fatal("p0 has no section")
	}
	name := b.seg.name
	for i := 1; i < 32; i++ {
		if err := s.Remove(fmt.Sprintf("p%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool {
		_, err := os.Stat(name)
		return errors.Is(err, os.ErrNotExist)
	})
	if got := sectionBytes(t, b); !bytes.Equal(got, content(n, 0)) {
		t.Error("the section read after compaction deleted its segment differs")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrClosed) {
		t.Errorf("the deleted segment's file after the last Close: %v, want closed", err)
	}
	if got := readAll(t, s, "p0", "v"); !bytes.Equal(got, content(n, 0)) {
		t.Error("p0 moved by compaction differs")
	}
}

// A record whose content did not check when it was last read whole (by
// Open's scan, or by compaction) is never served unread: Open reads and
// checks it, finds it corrupt and quarantines it. One that rots after its
// check is served as it is until a scrub pass reaches it (decision 0053).
func TestSectionSuspect(t *testing.T) {
	const n = 40 << 10
	t.Run("scan", func(t *testing.T) {
		dir := t.TempDir()
		s := openStore(t, dir, Options{NoSync: true})
		put(t, s, "a", "v", content(n, 1))
		put(t, s, "b", "v", content(n, 2)) // a good record after a's: a is corrupt, not torn
		name, off, _, err := s.Where("a", "v")
		if err != nil {
			t.Fatal(err)
		}
		flip(t, name, off+100)
		// Not checked before the scrub: served as it is.
		b, err := s.Open("a", "v")
		if err != nil {
			t.Fatalf("Open of a blob rotten since its check: %v", err)
		}
		if got := sectionBytes(t, b); bytes.Equal(got, content(n, 1)) || len(got) != n {
			t.Error("the rotten blob's section is not the bytes on disk")
		}
		b.Close()
		s = reopen(t, s, dir, Options{NoSync: true})
		if _, err := s.Open("a", "v"); !errors.Is(err, ErrChecksum) {
			t.Errorf("Open after the scan found it corrupt: %v, want ErrChecksum", err)
		}
		if _, err := s.Open("a", "v"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Open after its quarantine: %v, want ErrNotFound", err)
		}
		if got := readAll(t, s, "b", "v"); !bytes.Equal(got, content(n, 2)) {
			t.Error("b damaged")
		}
	})
	t.Run("compaction", func(t *testing.T) {
		s := openStore(t, t.TempDir(), Options{NoSync: true})
		s.log.max = 4 * n // three records a segment
		for i := range 6 {
			put(t, s, fmt.Sprintf("p%d", i), "v", content(n, uint64(i)))
		}
		name, off, _, err := s.Where("p0", "v")
		if err != nil {
			t.Fatal(err)
		}
		flip(t, name, off+100)
		for _, p := range []string{"p1", "p2"} { // p0's segment is then a third live
			if err := s.Remove(p, "v"); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, func() bool { return s.Checks().Compactions >= 1 })
		if _, err := s.Open("p0", "v"); !errors.Is(err, ErrChecksum) {
			t.Errorf("Open of a blob compaction found corrupt: %v, want ErrChecksum", err)
		}
	})
}

// The doorkeeper admits a blob at its second miss, tells versions (ids)
// apart, and forgets what it saw once it has marked doorResetAfter blobs.
func TestDoorkeeper(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{NoSync: true})
	d := newDoorkeeper()
	l := s.locate("a")
	if d.again(l, "v1") {
		t.Fatal("a first miss was admitted")
	}
	if !d.again(l, "v1") {
		t.Fatal("a second miss was not admitted")
	}
	if d.again(l, "v2") {
		t.Fatal("another version of the path was admitted at its first miss")
	}
	for i := 0; ; i++ { // until the marks clear
		if i == 2*doorResetAfter {
			t.Fatal("the doorkeeper never cleared its marks")
		}
		n := d.n.Load()
		var other loc
		binary.LittleEndian.PutUint64(other.key[:], uint64(i+1)*0x9e3779b97f4a7c15)
		d.again(other, "v")
		if d.n.Load() < n {
			break
		}
	}
	if d.again(l, "v1") {
		t.Fatal("a blob seen before the reset was still remembered")
	}
}
