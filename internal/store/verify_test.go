package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"
)

// corruptAt flips one byte of the data file of (path, id).
func corruptAt(t *testing.T, s *Store, path, id string, off int64) {
	t.Helper()
	f, err := os.OpenFile(s.locate(path).data(id), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// reopen closes s and opens its directory again: every blob is then
// unverified.
func reopen(t *testing.T, s *Store, dir string, opts Options) *Store {
	t.Helper()
	s.Close()
	return openStore(t, dir, opts)
}

// After a restart, a blob is checked before it is served: a small one at
// Open, a large one as it is read, whatever the access pattern.
func TestFirstOpenChecks(t *testing.T) {
	small, large := content(1000, 1), content(3<<20+5, 2)
	cases := []struct {
		name    string
		data    []byte
		corrupt int64 // offset flipped, -1: none
		read    func(*Blob) ([]byte, error)
	}{
		{"small intact", small, -1, readBlob},
		{"small corrupt", small, 10, readBlob},
		{"large intact sequential", large, -1, readBlob},
		{"large corrupt at start", large, 0, readBlob},
		{"large corrupt at end", large, int64(len(large) - 1), readBlob},
		{"large corrupt, WriteTo", large, 1 << 20, writeToBlob},
		{"large corrupt, range after Seek", large, 5, rangeBlob},
		{"large intact, range after Seek", large, -1, rangeBlob},
	}
	for _, cached := range []int64{0, 1 << 20} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("cache %d/%s", cached, tc.name), func(t *testing.T) {
				dir := t.TempDir()
				opts := Options{NoSync: true, CacheBytes: cached, SmallMax: -1} // segments: segments_test.go
				s := openStore(t, dir, opts)
				put(t, s, "p", "v", tc.data)
				s = reopen(t, s, dir, opts)
				if c := s.Checks(); c.Unverified != 1 {
					t.Fatalf("Unverified after reopen = %d, want 1", c.Unverified)
				}
				if tc.corrupt >= 0 {
					corruptAt(t, s, "p", "v", tc.corrupt)
				}
				got, err := openRead(s, tc.read)
				if tc.corrupt < 0 {
					if err != nil || !bytes.Equal(got, tc.data) {
						t.Fatalf("intact blob: %d bytes, %v", len(got), err)
					}
					if c := s.Checks(); c.Unverified != 0 || c.Verified != 1 || c.Corrupt != 0 {
						t.Errorf("Checks = %+v, want 1 verified", c)
					}
					b, _ := s.Open("p", "v")
					if b.Bytes() == nil && b.File() == nil {
						t.Error("a verified file-backed blob has no File (no sendfile)")
					}
					b.Close()
					return
				}
				if !errors.Is(err, ErrChecksum) {
					t.Fatalf("corrupt blob read: %d bytes, err %v; want ErrChecksum", len(got), err)
				}
				if len(got) >= len(tc.data) {
					t.Fatalf("corrupt blob read whole (%d bytes) before the error", len(got))
				}
				if _, err := s.Open("p", "v"); !errors.Is(err, ErrNotFound) {
					t.Errorf("Open after detection = %v, want ErrNotFound (quarantined)", err)
				}
				if c := s.Checks(); c.Corrupt != 1 || c.Unverified != 0 {
					t.Errorf("Checks = %+v, want 1 corrupt", c)
				}
				if n, b := s.Usage(); n != 0 || b != 0 {
					t.Errorf("Usage = %d, %d after quarantine", n, b)
				}
			})
		}
	}
}

// openRead opens p/v and reads it with read; an Open error is returned
// as the read's.
func openRead(s *Store, read func(*Blob) ([]byte, error)) ([]byte, error) {
	b, err := s.Open("p", "v")
	if err != nil {
		return nil, err
	}
	defer b.Close()
	got, err := read(b)
	if err == nil && b.CheckErr() != nil {
		err = errors.New("CheckErr set but no read error")
	}
	return got, err
}

func readBlob(b *Blob) ([]byte, error) { return io.ReadAll(b) }

func writeToBlob(b *Blob) ([]byte, error) {
	var buf bytes.Buffer
	_, err := b.WriteTo(&buf)
	return buf.Bytes(), err
}

// rangeBlob reads like http.ServeContent: size by Seek, then a range.
func rangeBlob(b *Blob) ([]byte, error) {
	if _, err := b.Seek(0, io.SeekEnd); err != nil {
		return nil, err
	}
	if _, err := b.Seek(100, io.SeekStart); err != nil {
		return nil, err
	}
	got := make([]byte, 100)
	if _, err := io.ReadFull(b, got[:100]); err != nil {
		return nil, err
	}
	rest := make([]byte, 100)
	if _, err := b.ReadAt(rest, 0); err != nil {
		return nil, err
	}
	all := append(rest, got...)
	tail, err := io.ReadAll(b)
	return append(all, tail...), err
}

func TestScrubFindsAndQuarantines(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{NoSync: true, SmallMax: -1}) // segments: segments_test.go
	var total int64
	for i, n := range []int{0, 10, 5000, 2 << 20} {
		put(t, s, "ok/"+string(rune('a'+i)), "v", content(n, uint64(i)))
		total += int64(n)
	}
	bad := content(3000, 9)
	put(t, s, "bad", "v", bad)
	corruptAt(t, s, "bad", "v", 1234)
	put(t, s, "badmeta", "v", []byte("x"))
	os.WriteFile(s.locate("badmeta").meta("v"), []byte("garbage"), 0o644)

	var found []Info
	read, err := s.Scrub(context.Background(), ScrubPace{}, func(info Info, err error) {
		if !errors.Is(err, ErrChecksum) {
			t.Errorf("bad called with %v", err)
		}
		found = append(found, info)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 {
		t.Fatalf("scrub found %+v, want 2 corrupt blobs", found)
	}
	for _, f := range found {
		if f.Path != "bad" && !(f.Path == "" && f.ID == "v") {
			t.Errorf("reported %+v", f)
		}
	}
	if read != total+int64(len(bad)) {
		t.Errorf("scrub read %d bytes, want %d", read, total+int64(len(bad)))
	}
	c := s.Checks()
	if c.ScrubPasses != 1 || c.ScrubBytes != read || c.Corrupt != 2 || c.Verified != 4 {
		t.Errorf("Checks = %+v", c)
	}
	for _, p := range []string{"bad", "badmeta"} {
		if _, err := s.Open(p, "v"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Open(%s) after scrub = %v, want ErrNotFound", p, err)
		}
	}
	if n, _ := s.Usage(); n != 4 {
		t.Errorf("Usage blobs = %d, want 4", n)
	}
}

func TestScrubPace(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{NoSync: true})
	put(t, s, "a", "v", content(600<<10, 1))
	// 600 KiB + 2 blobs' cost at 2 MiB/s: at least 0.3 s.
	put(t, s, "b", "v", nil)
	start := time.Now()
	if _, err := s.Scrub(context.Background(), ScrubPace{MaxRate: 2 << 20}, nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 290*time.Millisecond {
		t.Errorf("a capped pass took %v, want at least 0.3 s", d)
	}
	// Period spreads the same pass over about as long.
	start = time.Now()
	if _, err := s.Scrub(context.Background(), ScrubPace{Period: 400 * time.Millisecond}, nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 390*time.Millisecond {
		t.Errorf("a pass paced over 0.4 s took %v", d)
	}
	// Cancelled: stops at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Scrub(ctx, ScrubPace{MaxRate: 1}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled scrub = %v", err)
	}
}

// Readers racing with each other and with the scrub over blobs found at
// Open: every read is whole and right, and each blob ends up verified.
func TestConcurrentFirstOpens(t *testing.T) {
	dir := t.TempDir()
	opts := Options{NoSync: true, CacheBytes: 1 << 20}
	s := openStore(t, dir, opts)
	blobs := map[string][]byte{}
	for i, n := range []int{100, 50 << 10, 2 << 20, 3<<20 + 1} {
		p := fmt.Sprintf("p%d", i)
		blobs[p] = content(n, uint64(i))
		put(t, s, p, "v", blobs[p])
	}
	s = reopen(t, s, dir, opts)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := s.Scrub(context.Background(), ScrubPace{}, nil); err != nil {
			errs <- err
		}
	}()
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p, want := range blobs {
				b, err := s.Open(p, "v")
				if err != nil {
					errs <- err
					return
				}
				var got []byte
				if g%2 == 0 || len(want) < 200 {
					got, err = io.ReadAll(b)
				} else {
					got, err = rangeBlob(b)
				}
				b.Close()
				if err != nil || !bytes.Equal(got, want) {
					errs <- fmt.Errorf("%s: %d bytes, %v", p, len(got), err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if c := s.Checks(); c.Corrupt != 0 || c.Unverified != 0 || c.Verified < int64(len(blobs)) {
		t.Errorf("Checks = %+v", c)
	}
}
