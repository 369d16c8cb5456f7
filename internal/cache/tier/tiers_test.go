package tier

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/cache"
)

func object(key string, body string) *Object {
	return &Object{Meta: Meta{Key: key, Status: 200, Header: cache.Header{"Cache-Control": {"max-age=60"}},
		RequestTime: time.Unix(1000, 0).UTC(), ResponseTime: time.Unix(1001, 0).UTC()}, Body: []byte(body)}
}

func open(t *testing.T, cfg Config) *Tiers {
	t.Helper()
	cfg.NoSync = true
	tr, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

func get(t *testing.T, tr *Tiers, key string) (*Object, error) {
	t.Helper()
	vs := tr.Variants(key)
	if len(vs) == 0 {
		return nil, ErrNotFound
	}
	return tr.Get(vs[0])
}

func TestPutGetAndRestart(t *testing.T) {
	dir := t.TempDir()
	tr := open(t, Config{Dir: dir})
	if err := tr.Put(object("k1", "hello")); err != nil {
		t.Fatal(err)
	}
	o, err := get(t, tr, "k1")
	if err != nil || string(o.Body) != "hello" {
		t.Fatalf("get: %v %+v", err, o)
	}
	tr.Close()
	// A leftover temporary (a crash mid-write) must not come back.
	os.WriteFile(filepath.Join(dir, "tmp", "obj-123"), []byte("partial"), 0o644)
	tr2 := open(t, Config{Dir: dir})
	o, err = get(t, tr2, "k1")
	if err != nil || string(o.Body) != "hello" || o.Header["Cache-Control"][0] != "max-age=60" {
		t.Fatalf("after restart: %v %+v", err, o)
	}
	if st := tr2.Stats(); st.Promotions != 1 || st.DiskObjects != 1 {
		t.Errorf("stats %+v", st)
	}
	if _, err := os.Stat(filepath.Join(dir, "tmp", "obj-123")); !os.IsNotExist(err) {
		t.Error("temporary file survived the restart")
	}
}

func TestCorruptAndTruncatedFiles(t *testing.T) {
	tests := []struct {
		name   string
		damage func(path string)
	}{
		{"flipped byte in body", func(p string) {
			b, _ := os.ReadFile(p)
			i := bytes.Index(b, []byte("hello"))
			b[i] ^= 1
			os.WriteFile(p, b, 0o644)
		}},
		{"truncated", func(p string) {
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-10)
		}},
		{"empty", func(p string) { os.Truncate(p, 0) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tr := open(t, Config{Dir: dir})
			o := object("k", "hello world")
			if err := tr.Put(o); err != nil {
				t.Fatal(err)
			}
			tr.Close()
			tc.damage(tr.disk.path(o.ID()))
			tr2 := open(t, Config{Dir: dir})
			got, err := get(t, tr2, "k")
			if err == nil {
				t.Fatalf("served a damaged object: %q", got.Body)
			}
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("err %v", err)
			}
			if len(tr2.Variants("k")) != 0 {
				t.Error("damaged object still indexed")
			}
		})
	}
}

func TestBounds(t *testing.T) {
	t.Run("disk bound evicts least recently used", func(t *testing.T) {
		tr := open(t, Config{Dir: t.TempDir(), DiskBytes: 3000, MemoryBytes: 1 << 20})
		body := string(bytes.Repeat([]byte("x"), 900))
		for _, k := range []string{"a", "b", "c", "d"} {
			if err := tr.Put(object(k, body)); err != nil {
				t.Fatal(err)
			}
		}
		tr.Flush()
		st := tr.Stats()
		if st.DiskBytes > 3000 || st.DiskEvictions == 0 {
			t.Errorf("disk over its bound: %+v", st)
		}
	})
	t.Run("memory bound demotes to disk", func(t *testing.T) {
		tr := open(t, Config{Dir: t.TempDir(), MemoryBytes: 64 << 10, WriteQueue: 1 << 20}) // a queue for every object, however fast they come
		body := string(bytes.Repeat([]byte("y"), 16<<10))
		for i := range 40 {
			if err := tr.Put(object(string(rune('A'+i)), body)); err != nil {
				t.Fatal(err)
			}
		}
		tr.Flush()
		tr.mem.CleanUp()
		if st := tr.Stats(); st.MemoryBytes > 64<<10 || st.Objects != 40 {
			t.Fatalf("stats %+v", st)
		}
		for i := range 40 {
			if o, err := get(t, tr, string(rune('A'+i))); err != nil || len(o.Body) != 16<<10 {
				t.Fatalf("object %d: %v", i, err)
			}
		}
		if tr.Stats().Promotions == 0 {
			t.Error("nothing was promoted from disk")
		}
	})
	t.Run("memory only forgets what it evicts", func(t *testing.T) {
		tr := open(t, Config{MemoryBytes: 64 << 10})
		body := string(bytes.Repeat([]byte("z"), 16<<10))
		for i := range 40 {
			tr.Put(object(string(rune('A'+i)), body))
		}
		tr.mem.CleanUp()
		deadline := time.Now().Add(5 * time.Second)
		for tr.Stats().Objects > 8 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // deletion events run on otter's executor
		}
		if st := tr.Stats(); st.Objects > 8 {
			t.Errorf("index keeps evicted objects: %+v", st)
		}
	})
}

func TestVariantsAndRemove(t *testing.T) {
	tr := open(t, Config{Dir: t.TempDir()})
	a, b := object("site/x", "en"), object("site/x", "fr")
	a.Vary, a.Selected = []string{"Accept-Language"}, cache.Selected{"Accept-Language": "en"}
	b.Vary, b.Selected = []string{"Accept-Language"}, cache.Selected{"Accept-Language": "fr"}
	tr.Put(a)
	tr.Put(b)
	tr.Put(object("site/y", "y"))
	if n := len(tr.Variants("site/x")); n != 2 {
		t.Fatalf("%d variants", n)
	}
	c := object("site/x", "other")
	c.Vary = []string{"Accept-Encoding"}
	tr.Put(c)
	if n := len(tr.Variants("site/x")); n != 1 {
		t.Fatalf("%d variants after a change of Vary", n)
	}
	tr.Flush()
	if n := tr.RemovePrefix("site/"); n != 2 {
		t.Fatalf("removed %d", n)
	}
	if st := tr.Stats(); st.Objects != 0 || st.DiskBytes != 0 {
		t.Errorf("left after purge: %+v", st)
	}
}

// TestRacedStoresServeOneResponse: two stores of one object racing can
// leave the index naming one response and the file holding the other;
// what Get returns is still one response, header and body, and the index
// follows the file.
func TestRacedStoresServeOneResponse(t *testing.T) {
	tr := open(t, Config{Dir: t.TempDir()})
	a, b := object("k", "first response"), object("k", "second, longer response")
	a.Header = cache.Header{"Etag": {`"a"`}}
	b.Header = cache.Header{"Etag": {`"b"`}}
	b.ResponseTime = a.ResponseTime.Add(time.Second)
	b.Size = int64(len(b.Body))
	if err := tr.Put(a); err != nil {
		t.Fatal(err)
	}
	tr.Flush()
	// b's store wrote its file last; a's meta is the one indexed.
	if _, err := tr.disk.write(b); err != nil {
		t.Fatal(err)
	}
	tr.mem.Invalidate(a.ID())
	for i := range 2 {
		o, err := get(t, tr, "k")
		if err != nil || string(o.Body) != string(b.Body) || o.Header["Etag"][0] != `"b"` || o.Size != b.Size {
			t.Fatalf("read %d: %v, %+v", i, err, o)
		}
		if fromDisk := i == 0; o.FromDisk != fromDisk {
			t.Errorf("read %d: from disk %v, want %v", i, o.FromDisk, fromDisk)
		}
	}
	if st := tr.Stats(); st.Objects != 1 || st.DiskBytes != fileSize(t, tr, b.ID()) {
		t.Errorf("stats %+v", st)
	}
}

func fileSize(t *testing.T, tr *Tiers, id string) int64 {
	t.Helper()
	fi, err := os.Stat(tr.disk.path(id))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestDiskObjectsHoldNoBody: an object demoted to disk keeps only its meta
// in memory. The index once pointed at the stored object's own Meta, an
// interior pointer that kept the object, and with it the body, alive: the
// memory tier's bound then bounded nothing, and paper 003's cache node
// grew with its disk tier until the host's OOM killer took it.
func TestDiskObjectsHoldNoBody(t *testing.T) {
	const n, size = 48, 1 << 20
	tr := open(t, Config{Dir: t.TempDir(), MemoryBytes: 4 << 20, WriteQueue: 1 << 30, NoBypass: true}) // every object written, however slow the disk
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		if err := tr.Put(object("k"+strconv.Itoa(i), strings.Repeat("b", size))); err != nil {
			t.Fatal(err)
		}
	}
	tr.Flush()
	tr.mem.CleanUp()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if st := tr.Stats(); st.DiskObjects != n {
		t.Fatalf("stats %+v: want every object on disk", st)
	}
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 16<<20 {
		t.Errorf("heap grew %d MiB for %d MiB on disk and a 4 MiB memory tier", grown>>20, n*size>>20)
	}
}

// TestWriteQueueFollowsMemoryTier: with the disk stuck, the objects
// waiting to be written hold at most a quarter of the memory tier in the
// heap besides it. The queue was 32 MiB whatever --proxy-memory said: with
// a 16 MiB tier and a slow disk the node's heap held the tier, the full
// queue and the fills, more than a 96–128 MB host could give it.
func TestWriteQueueFollowsMemoryTier(t *testing.T) {
	const mem, n, size = 4 << 20, 256, 64 << 10 // 16 MiB stored through a 4 MiB tier
	release := make(chan struct{})
	var once sync.Once
	tr := open(t, Config{Dir: t.TempDir(), MemoryBytes: mem, DiskLatency: 1 << 62, BeforeDiskIO: func() { <-release }})
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before Close, which drains the queue
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		if err := tr.Put(object("k"+strconv.Itoa(i), strings.Repeat("b", size))); err != nil {
			t.Fatal(err)
		}
	}
	tr.mem.CleanUp()
	st := tr.Stats()
	if st.WriteQueueBytes > mem/4 || st.DiskSkipped == 0 {
		t.Errorf("write queue %d bytes, %d skipped; want at most %d bytes queued and the rest skipped", st.WriteQueueBytes, st.DiskSkipped, mem/4)
	}
	// The memory tier tells its evictions on goroutines of their own
	// (otter's executor), each holding its object until it has run: the
	// heap is read again until they have (1 run in ~15 saw 2 MiB more).
	const bound = mem + mem/4 + 2<<20
	var grown int64
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runtime.GC()
		runtime.ReadMemStats(&after)
		if grown = int64(after.HeapAlloc) - int64(before.HeapAlloc); grown <= bound || time.Now().After(deadline) {
			break
		}
	}
	if grown > bound {
		t.Errorf("heap grew %d KiB for a %d KiB memory tier with the disk stuck (%d KiB stored)", grown>>10, mem>>10, n*size>>10)
	}
}
