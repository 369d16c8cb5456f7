package store

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
)

// blobFor returns the deterministic content of (path, id, variant), so any
// goroutine can check what it reads. Sizes straddle the cache limit.
func blobFor(path, id string, variant int) []byte {
	h := fnv.New64a()
	fmt.Fprint(h, path, "\x00", id, "\x00", variant)
	seed := h.Sum64()
	sizes := []int{0, 100, 3000, 70 << 10}
	return content(sizes[seed%uint64(len(sizes))], seed)
}

func TestConcurrent(t *testing.T) {
	const (
		workers = 8
		ops     = 150
	)
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true, CacheBytes: 256 << 10, CacheMaxBlob: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"a", "a/b", "a/b/c", "shared/file", "x"}
	ids := []string{"v1", "v2", "v3"}

	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 42))
			fail := func(format string, args ...any) {
				select {
				case errc <- fmt.Errorf("worker %d: "+format, append([]any{g}, args...)...):
				default:
				}
			}
			for i := 0; i < ops; i++ {
				path := paths[r.IntN(len(paths))]
				id := ids[r.IntN(len(ids))]
				// Two possible contents per (path, id): commits race to replace.
				want0, want1 := blobFor(path, id, 0), blobFor(path, id, 1)
				switch op := r.IntN(10); {
				case op < 4:
					w, err := s.Create(path, id)
					if err != nil {
						fail("Create: %v", err)
						return
					}
					data := want0
					if r.IntN(2) == 1 {
						data = want1
					}
					w.Write(data)
					if _, err := w.Commit(); err != nil {
						fail("Commit %s/%s: %v", path, id, err)
					}
					w.Abort()
				case op < 8:
					b, err := s.Open(path, id)
					if errors.Is(err, ErrNotFound) {
						continue
					}
					if err != nil {
						fail("Open: %v", err)
						return
					}
					got, err := io.ReadAll(b)
					b.Close()
					if err != nil || !(bytes.Equal(got, want0) || bytes.Equal(got, want1)) {
						fail("read %s/%s: %d bytes, %v: content is neither version", path, id, len(got), err)
					}
				case op == 8:
					var err error
					if r.IntN(2) == 0 {
						err = s.Remove(path, id)
					} else {
						err = s.RemoveExcept(path, id)
					}
					if err != nil {
						fail("remove: %v", err)
					}
				default:
					if _, err := s.Stat(path, id); err != nil && !errors.Is(err, ErrNotFound) {
						fail("Stat: %v", err)
					}
					if _, err := s.List(path); err != nil {
						fail("List: %v", err)
					}
					if err := s.Verify(path, id); err != nil && !errors.Is(err, ErrNotFound) {
						fail("Verify: %v", err)
					}
					if r.IntN(5) == 0 {
						if err := s.Walk(func(Info) error { return nil }); err != nil {
							fail("Walk: %v", err)
						}
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}

	// Quiescent state: cache, disk, listings and counters agree.
	var nblobs, nbytes int64
	for _, p := range paths {
		for _, id := range ids {
			st, serr := s.Stat(p, id)
			b, oerr := s.Open(p, id)
			if errors.Is(serr, ErrNotFound) {
				if !errors.Is(oerr, ErrNotFound) {
					t.Errorf("%s/%s: removed but Open = %v (stale cache?)", p, id, oerr)
				}
				if b != nil {
					b.Close()
				}
				continue
			}
			if serr != nil || oerr != nil {
				t.Fatalf("%s/%s: Stat %v, Open %v", p, id, serr, oerr)
			}
			got, _ := io.ReadAll(b)
			b.Close()
			if sumHex(got) != st.Sum {
				t.Errorf("%s/%s: Open content does not match Stat sum (stale cache?)", p, id)
			}
			nblobs++
			nbytes += st.Size
		}
	}
	if n, b := s.Usage(); n != nblobs || b != nbytes {
		t.Errorf("Usage = %d, %d; blobs present: %d, %d", n, b, nblobs, nbytes)
	}
	s.Close()
	s = openStore(t, dir, Options{NoSync: true})
	if n, b := s.Usage(); n != nblobs || b != nbytes {
		t.Errorf("Usage after reopen = %d, %d; want %d, %d", n, b, nblobs, nbytes)
	}
}

// Readers hammering one cached blob while it is removed and recommitted
// never see a removed blob after Remove returns.
func TestConcurrentRemoveVsCachedOpen(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{NoSync: true, CacheBytes: 1 << 20})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if b, err := s.Open("hot", "v1"); err == nil {
					b.Close()
				}
			}
		}()
	}
	for i := 0; i < 200; i++ {
		put(t, s, "hot", "v1", []byte("content"))
		if err := s.Remove("hot", "v1"); err != nil {
			t.Fatal(err)
		}
		if b, err := s.Open("hot", "v1"); !errors.Is(err, ErrNotFound) {
			if b != nil {
				b.Close()
			}
			t.Fatalf("iteration %d: Open after Remove = %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
}
