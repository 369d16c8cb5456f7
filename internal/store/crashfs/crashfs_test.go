package crashfs

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// tree lists every file under root with its content ("dir/" for
// directories).
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func write(t *testing.T, f *FS, dir, data string, sync bool) string {
	t.Helper()
	h, err := f.CreateTemp(dir, "f-*")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := h.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return h.Name()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestCrashKeepsOnlyWhatWasSynced(t *testing.T) {
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "old"), []byte("before"), 0o644))
	f, err := New(root)
	must(t, err)
	d := filepath.Join(root, "d")
	must(t, f.Mkdir(d, 0o755))
	must(t, f.SyncDir(root)) // d is durable
	must(t, f.Mkdir(filepath.Join(root, "gone"), 0o755))

	synced := write(t, f, d, "synced", true)
	must(t, f.Rename(synced, filepath.Join(d, "a")))
	unsynced := write(t, f, d, "not synced", false)
	must(t, f.Rename(unsynced, filepath.Join(d, "b")))
	must(t, f.SyncDir(d)) // a and b are durable entries; b's content is not

	// Changes after the last syncs: lost.
	h, err := f.CreateTemp(d, "late-*")
	must(t, err)
	must(t, h.Sync())
	must(t, f.Rename(filepath.Join(d, "a"), filepath.Join(d, "c"))) // not synced: reverted
	must(t, f.Remove(filepath.Join(root, "old")))                   // not synced: reverted
	ha, err := os.OpenFile(filepath.Join(d, "c"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	ha.Write([]byte(" and more")) // behind the FS's back, never synced
	ha.Close()

	g, err := f.Crash()
	must(t, err)
	want := map[string]string{"old": "before", "d/": "", "d/a": "synced", "d/b": ""}
	if got := tree(t, root); !maps.Equal(got, want) {
		t.Errorf("after crash: %v, want %v", got, want)
	}
	// The old FS and its files are dead.
	if _, err := h.Write([]byte("x")); !errors.Is(err, ErrPowerLoss) {
		t.Errorf("write through a file of the dead FS: %v", err)
	}
	if _, err := f.ReadDir(root); !errors.Is(err, ErrPowerLoss) {
		t.Errorf("ReadDir on the dead FS: %v", err)
	}
	// The new one works, and what survived is durable for it.
	must(t, g.Rename(filepath.Join(d, "a"), filepath.Join(d, "z")))
	g2, err := g.Crash()
	must(t, err)
	if got := tree(t, root); !maps.Equal(got, want) {
		t.Errorf("after a second crash: %v, want %v", got, want)
	}
	if _, err := g2.Lstat(filepath.Join(d, "a")); err != nil {
		t.Error(err)
	}
}

func TestCrashAfter(t *testing.T) {
	root := t.TempDir()
	f, err := New(root)
	must(t, err)
	f.CrashAfter(3)
	h, err := f.CreateTemp(root, "x-*") // 1
	must(t, err)
	_, err = h.Write([]byte("x")) // 2
	must(t, err)
	if err := h.Sync(); !errors.Is(err, ErrPowerLoss) { // 3: the power goes
		t.Fatalf("third operation: %v, want ErrPowerLoss", err)
	}
	if err := f.SyncDir(root); !errors.Is(err, ErrPowerLoss) {
		t.Fatalf("after the power loss: %v", err)
	}
	if f.Ops() != 3 {
		t.Errorf("Ops = %d", f.Ops())
	}
	if _, err := f.Crash(); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, root); len(got) != 0 {
		t.Errorf("after crash: %v, want nothing", got)
	}
}

func TestLock(t *testing.T) {
	f, err := New(t.TempDir())
	must(t, err)
	l, err := f.Lock("L")
	must(t, err)
	if _, err := f.Lock("L"); err == nil {
		t.Fatal("second lock taken")
	}
	must(t, l.Close())
	if _, err := f.Lock("L"); err != nil {
		t.Fatal(err)
	}
	g, err := f.Crash()
	must(t, err)
	if _, err := g.Lock("L"); err != nil {
		t.Fatalf("lock after reboot: %v", err)
	}
}

// TearTails keeps the synced content, then a prefix of what was appended
// since, then zeros, never beyond the size the file had.
func TestTearTails(t *testing.T) {
	const synced, appended = "synced|", "appended and never synced"
	sawTorn := false
	for seed := range uint64(20) {
		root := t.TempDir()
		f, err := New(root)
		must(t, err)
		f.TearTails(seed)
		h, err := f.CreateTemp(root, "f-*")
		must(t, err)
		_, err = h.Write([]byte(synced))
		must(t, err)
		must(t, h.Sync())
		_, err = h.Write([]byte(appended))
		must(t, err)
		must(t, f.SyncDir(root))
		name := filepath.Base(h.Name())
		h.Close()
		if _, err := f.Crash(); err != nil {
			t.Fatal(err)
		}
		got := tree(t, root)[name]
		kept := len(got) - len(synced)
		if kept < 0 || kept > len(appended) || got[:len(synced)] != synced {
			t.Fatalf("seed %d: %q", seed, got)
		}
		i := 0
		for i < kept && got[len(synced)+i] == appended[i] {
			i++
		}
		for _, c := range []byte(got[len(synced)+i:]) {
			if c != 0 {
				t.Fatalf("seed %d: %q is not a prefix of the append then zeros", seed, got)
			}
		}
		sawTorn = sawTorn || i < kept
	}
	if !sawTorn {
		t.Error("no seed kept zeros after a prefix")
	}
}

// A write into zeros already synced (a log that writes zeros ahead of its
// appends) is torn like an append: the synced size stays, and what lies
// past the synced record is a prefix of the write, then zeros.
func TestTearTailsIntoZeros(t *testing.T) {
	const synced, written = "synced|", "written over zeros"
	const size = 64
	sawTorn := false
	for seed := range uint64(20) {
		root := t.TempDir()
		f, err := New(root)
		must(t, err)
		f.TearTails(seed)
		h, err := f.CreateTemp(root, "f-*")
		must(t, err)
		_, err = h.WriteAt(append([]byte(synced), make([]byte, size-len(synced))...), 0)
		must(t, err)
		must(t, h.Sync())
		_, err = h.WriteAt([]byte(written), int64(len(synced)))
		must(t, err)
		must(t, f.SyncDir(root))
		name := filepath.Base(h.Name())
		h.Close()
		if _, err := f.Crash(); err != nil {
			t.Fatal(err)
		}
		got := tree(t, root)[name]
		if len(got) != size || got[:len(synced)] != synced {
			t.Fatalf("seed %d: %q (%d bytes), want %d bytes starting %q", seed, got, len(got), size, synced)
		}
		rest := got[len(synced):]
		i := 0
		for i < len(written) && rest[i] == written[i] {
			i++
		}
		for _, c := range []byte(rest[i:]) {
			if c != 0 {
				t.Fatalf("seed %d: %q is not a prefix of the write then zeros", seed, rest)
			}
		}
		sawTorn = sawTorn || i > 0 && i < len(written)
	}
	if !sawTorn {
		t.Error("no seed kept part of the write")
	}
}
