package store

import (
	"errors"
	"fmt"
	"testing"
)

func TestCacheServing(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		size    int
		fromMem bool
	}{
		{"small cached", Options{CacheBytes: 1 << 20}, 1000, true},
		{"empty cached", Options{CacheBytes: 1 << 20}, 0, true},
		{"at limit cached", Options{CacheBytes: 1 << 20}, 64 << 10, true},
		{"over limit from file", Options{CacheBytes: 1 << 20}, 64<<10 + 1, false},
		{"custom limit", Options{CacheBytes: 1 << 20, CacheMaxBlob: 100}, 101, false},
		{"cache disabled", Options{}, 10, false},
		{"bigger than cache", Options{CacheBytes: 1000, CacheMaxBlob: 4000}, 2000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.NoSync = true
			tt.opts.SmallMax = -1 // the cache's choice, not the segments' (segments_test.go)
			s := openStore(t, t.TempDir(), tt.opts)
			data := content(tt.size, 5)
			put(t, s, "p/q", "v1", data)
			for i := 0; i < 2; i++ { // miss, then hit
				b, err := s.Open("p/q", "v1")
				if err != nil {
					t.Fatal(err)
				}
				if tt.fromMem {
					if b.Bytes() == nil || b.File() != nil {
						t.Errorf("open %d: want memory blob, got Bytes=%v File=%v", i, b.Bytes() != nil, b.File())
					}
					if string(b.Bytes()) != string(data) {
						t.Errorf("open %d: Bytes differ", i)
					}
				} else if b.File() == nil || b.Bytes() != nil {
					t.Errorf("open %d: want file blob", i)
				}
				b.Close()
			}
			if got := readAll(t, s, "p/q", "v1"); string(got) != string(data) {
				t.Error("content differs")
			}
			if err := s.Remove("p/q", "v1"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Open("p/q", "v1"); !errors.Is(err, ErrNotFound) {
				t.Errorf("Open after Remove: %v, want ErrNotFound", err)
			}
			if n, used := s.cache.stats(); n != 0 || used != 0 {
				t.Errorf("cache after Remove: %d entries, %d bytes", n, used)
			}
		})
	}
}

func TestCacheLRU(t *testing.T) {
	c := newCache(3*(100+entryOverhead+2), 1000) // room for three 100-byte entries with 2-byte keys
	key := func(i int) cacheKey { return cacheKey{"p", fmt.Sprint(i)} }
	for i := 0; i < 3; i++ {
		c.add(key(i), 0, c.gen(0), make([]byte, 100))
	}
	if _, ok := c.get(key(0)); !ok { // 0 becomes most recent; 1 is LRU
		t.Fatal("entry 0 missing")
	}
	c.add(key(3), 0, c.gen(0), make([]byte, 100))
	for i, want := range []bool{true, false, true, true} {
		if _, ok := c.get(key(i)); ok != want {
			t.Errorf("entry %d present = %v, want %v", i, ok, want)
		}
	}
	if n, used := c.stats(); n != 3 || used > c.maxBytes {
		t.Errorf("stats = %d, %d (max %d)", n, used, c.maxBytes)
	}
	// Re-adding a key replaces it without double counting.
	c.add(key(3), 0, c.gen(0), make([]byte, 50))
	if d, _ := c.get(key(3)); len(d) != 50 {
		t.Errorf("replaced entry has %d bytes", len(d))
	}
	if _, used := c.stats(); used != 2*(100+entryOverhead+2)+50+entryOverhead+2 {
		t.Errorf("used = %d after replace", used)
	}
}

// A reader that sampled the generation before a concurrent invalidation must
// not insert what it read.
func TestCacheStaleAdd(t *testing.T) {
	c := newCache(1<<20, 1<<10)
	k := cacheKey{"p", "v"}
	g := c.gen(7)
	c.invalidate(k, 7) // e.g. Remove runs between the reader's open and add
	c.add(k, 7, g, []byte("stale"))
	if _, ok := c.get(k); ok {
		t.Error("stale content inserted after invalidation")
	}
	g = c.gen(7)
	c.invalidate(cacheKey{"other", "v"}, 8) // another stripe: no effect
	c.add(k, 7, g, []byte("fresh"))
	if d, ok := c.get(k); !ok || string(d) != "fresh" {
		t.Error("fresh content not inserted")
	}
}

func TestCachedOpenAllocs(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{NoSync: true, CacheBytes: 1 << 20})
	put(t, s, "hot/path", "v1", content(512, 1))
	readAll(t, s, "hot/path", "v1")
	allocs := testing.AllocsPerRun(100, func() {
		b, err := s.Open("hot/path", "v1")
		if err != nil || b.Bytes() == nil {
			t.Fatal("not served from cache", err)
		}
		b.Close()
	})
	if allocs > 1 {
		t.Errorf("cached Open allocates %.1f times, want <= 1 (the Blob)", allocs)
	}
}

func BenchmarkOpenCached(b *testing.B) {
	s, err := Open(b.TempDir(), Options{NoSync: true, CacheBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	w, _ := s.Create("bench/file", "v1")
	w.Write(make([]byte, 4096))
	if _, err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bl, err := s.Open("bench/file", "v1")
			if err != nil {
				b.Fatal(err)
			}
			bl.Close()
		}
	})
}
