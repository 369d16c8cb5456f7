package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mure-dev/mure/internal/store"
	"github.com/mure-dev/mure/internal/store/crashfs"
)

// TestPowerLoss runs commits, replacements and removals concurrently on a
// disk that loses power at a random operation, then reboots it and opens
// the store again: every acknowledged operation must have survived
// (acknowledged blobs read back intact and pass Verify, acknowledged
// removals stay removed), an interrupted one may have happened or not
// (never half: no torn content, and no blob reported corrupt), and no
// debris is visible.
func TestPowerLoss(t *testing.T) {
	runs := 20 // about 0.5 s each, mostly the 256 mkdirs of each Open
	if testing.Short() {
		runs = 5
	}
	for seed := range runs {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) { powerLossRun(t, uint64(seed)) })
	}
}

// key is one blob; outcome one state it may be in after the crash.
type key struct{ path, id string }

type outcome struct {
	present bool
	data    []byte
}

// history records, per blob, the states a crash may leave it in.
type history struct {
	mu      sync.Mutex
	allowed map[key][]outcome
}

// done records an operation's result: acknowledged, only its outcome is
// allowed; failed, its outcome joins those allowed before.
func (h *history) done(k key, o []outcome, acked bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if acked {
		h.allowed[k] = o
		return
	}
	h.allowed[k] = append(h.allowed[k], o...)
}

func powerLossRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	root := t.TempDir()
	fsys, err := crashfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	// A third of the seeds keep a torn part of what was appended and not
	// synced: a record whose header made it and whose content did not
	// must not count as a corrupt blob (nor be served). The others keep
	// the strict model, which catches a missing fsync best.
	if seed%3 == 2 {
		fsys.TearTails(seed)
	}
	opts := store.Options{FS: fsys}
	if seed%2 == 1 {
		opts.CacheBytes = 1 << 20
	}
	// Half the seeds write only small blobs (segments, decision 0037);
	// the others mix both kinds, and a small id replaced by a large one.
	maxSize := 300 << 10
	if seed%4 >= 2 {
		maxSize = 64 << 10
	}
	s, err := store.Open(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Half the seeds seal a segment every 64 KiB, so that the power may
	// go while one is sealed, begun or compacted.
	if seed%8 >= 4 {
		store.SetSegmentMax(s, 64<<10)
	}
	h := &history{allowed: map[key][]outcome{}}
	const workers = 4
	// Every worker starts with two acknowledged blobs.
	start := fsys.Ops()
	for w := range workers {
		for j := range 2 {
			k := key{fmt.Sprintf("w%d/f%d", w, j), "v0"}
			data := blobData(rng, min(70<<10, maxSize))
			if err := commit(s, k, data); err != nil {
				t.Fatal(err)
			}
			h.done(k, []outcome{{true, data}}, true)
		}
	}
	perOp := (fsys.Ops() - start) / (2 * workers)
	const opsPerWorker = 12
	fsys.CrashAfter(1 + rng.IntN(perOp*workers*opsPerWorker))

	var wg sync.WaitGroup
	for w := range workers {
		wrng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(s, h, wrng, w, opsPerWorker, maxSize)
		}()
	}
	wg.Wait()

	fsys2, err := fsys.Crash()
	if err != nil {
		t.Fatal(err)
	}
	opts.FS = fsys2
	s2, err := store.Open(root, opts)
	if err != nil {
		t.Fatalf("open after the power loss: %v", err)
	}
	defer s2.Close()
	checkAfterCrash(t, s2, h)
	checkNoDebris(t, root)
	if err := commit(s2, key{"after", "v"}, []byte("works")); err != nil {
		t.Errorf("commit after reboot: %v", err)
	}
}

// work runs n random operations on worker w's own blobs, stopping at the
// first error (after the power loss every operation fails).
func work(s *store.Store, h *history, rng *rand.Rand, w, n, maxSize int) {
	var mine []key
	for j := range 2 {
		mine = append(mine, key{fmt.Sprintf("w%d/f%d", w, j), "v0"})
	}
	for i := range n {
		k := mine[rng.IntN(len(mine))]
		h.mu.Lock()
		before := h.allowed[k]
		h.mu.Unlock()
		last := before[len(before)-1]
		var err error
		var o []outcome
		switch op := rng.IntN(10); {
		case op < 5 || !last.present: // a new blob
			k = key{fmt.Sprintf("w%d/f%d", w, rng.IntN(4)), fmt.Sprintf("n%d", i)}
			data := blobData(rng, maxSize)
			mine = append(mine, k)
			h.done(k, []outcome{{false, nil}}, true) // absent so far
			o = []outcome{{true, data}}
			err = commit(s, k, data)
		case op < 7: // same id, new content: the old one may be lost on failure
			data := blobData(rng, maxSize)
			o = []outcome{{true, data}, {false, nil}}
			err = commit(s, k, data)
			if err == nil {
				o = o[:1]
			}
		case op < 8: // the same content again
			o = []outcome{last}
			err = commit(s, k, last.data)
		default:
			o = []outcome{{false, nil}}
			err = s.Remove(k.path, k.id)
		}
		h.done(k, o, err == nil)
		if err != nil {
			return
		}
	}
}

func commit(s *store.Store, k key, data []byte) error {
	w, err := s.Create(k.path, k.id)
	if err != nil {
		return err
	}
	defer w.Abort()
	if _, err := w.Write(data); err != nil {
		return err
	}
	_, err = w.Commit()
	return err
}

func blobData(rng *rand.Rand, max int) []byte {
	b := make([]byte, rng.IntN(max+1))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// checkAfterCrash checks every blob against the states allowed, and the
// store's listing and counters against what is there.
func checkAfterCrash(t *testing.T, s *store.Store, h *history) {
	t.Helper()
	var blobs, bytesTotal int64
	for k, allowed := range h.allowed {
		got := outcome{}
		b, err := s.Open(k.path, k.id)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			t.Errorf("%v: Open: %v", k, err)
			continue
		default:
			data, rerr := io.ReadAll(b)
			b.Close()
			if rerr != nil {
				t.Errorf("%v: read: %v", k, rerr)
				continue
			}
			got = outcome{true, data}
			if err := s.Verify(k.path, k.id); err != nil {
				t.Errorf("%v: Verify: %v", k, err)
			}
			blobs++
			bytesTotal += int64(len(data))
		}
		ok := false
		for _, a := range allowed {
			ok = ok || a.present == got.present && bytes.Equal(a.data, got.data)
		}
		if !ok {
			t.Errorf("%v after the crash: present %v, %d bytes; allowed: %s", k, got.present, len(got.data), describe(allowed))
		}
	}
	var walked int64
	if err := s.Walk(func(store.Info) error { walked++; return nil }); err != nil {
		t.Errorf("Walk: %v", err)
	}
	if n, b := s.Usage(); n != blobs || b != bytesTotal || walked != blobs {
		t.Errorf("Usage = %d blobs, %d bytes; Walk saw %d; readable: %d blobs, %d bytes", n, b, walked, blobs, bytesTotal)
	}
	if c := s.Checks(); c.Corrupt != 0 {
		t.Errorf("%d corrupt blobs after the crash", c.Corrupt)
	}
}

func describe(outcomes []outcome) string {
	var parts []string
	for _, o := range outcomes {
		parts = append(parts, fmt.Sprintf("{present %v, %d bytes}", o.present, len(o.data)))
	}
	return strings.Join(parts, " or ")
}

// checkNoDebris looks at the disk: nothing in tmp or quarantine, and in
// blobs every data file has its sidecar and every sidecar its data file.
func checkNoDebris(t *testing.T, root string) {
	t.Helper()
	for _, d := range []string{"tmp", "quarantine"} {
		if ents, err := os.ReadDir(filepath.Join(root, d)); err != nil || len(ents) != 0 {
			t.Errorf("%s after reopening: %d entries, %v", d, len(ents), err)
		}
	}
	names := map[string]bool{}
	filepath.WalkDir(filepath.Join(root, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names[p] = true
		}
		return err
	})
	for p := range names {
		if base, ok := strings.CutSuffix(p, ".meta"); ok {
			if !names[base] {
				t.Errorf("sidecar without data: %s", p)
			}
		} else if !names[p+".meta"] {
			t.Errorf("data without sidecar: %s", p)
		}
	}
}
