package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func openStore(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func content(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func sumHex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// put commits data as (path, id) via io.Copy (so through ReadFrom).
func put(t *testing.T, s *Store, path, id string, data []byte) Info {
	t.Helper()
	w, err := s.Create(path, id)
	if err != nil {
		t.Fatalf("Create(%q, %q): %v", path, id, err)
	}
	defer w.Abort()
	if _, err := io.Copy(w, bytes.NewReader(data)); err != nil {
		t.Fatalf("copy %q/%s: %v", path, id, err)
	}
	info, err := w.Commit()
	if err != nil {
		t.Fatalf("Commit %q/%s: %v", path, id, err)
	}
	return info
}

func readAll(t *testing.T, s *Store, path, id string) []byte {
	t.Helper()
	b, err := s.Open(path, id)
	if err != nil {
		t.Fatalf("Open(%q, %q): %v", path, id, err)
	}
	defer b.Close()
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatalf("read %q/%s: %v", path, id, err)
	}
	return got
}

// filesUnder lists every non-directory under root, relative to it.
func filesUnder(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	sizes := []int{0, 1, 100, 64 << 10, 64<<10 + 1, 1<<20 + 3}
	for _, cached := range []bool{false, true} {
		opts := Options{NoSync: true}
		name := "file"
		if cached {
			opts.CacheBytes = 4 << 20
			name = "cached"
		}
		t.Run(name, func(t *testing.T) {
			s := openStore(t, t.TempDir(), opts)
			for i, n := range sizes {
				data := content(n, uint64(i))
				path := "dir/file.txt"
				id := "v" + string(rune('a'+i))
				info := put(t, s, path, id, data)
				if info.Size != int64(n) || info.Sum != sumHex(data) || info.Path != path || info.ID != id {
					t.Errorf("size %d: Commit info %+v, want size %d sum %s", n, info, n, sumHex(data))
				}
				if info.ModTime.IsZero() {
					t.Errorf("size %d: zero ModTime", n)
				}
				st, err := s.Stat(path, id)
				if err != nil {
					t.Fatalf("Stat: %v", err)
				}
				if st.Size != int64(n) || st.Sum != sumHex(data) || st.Path != path {
					t.Errorf("size %d: Stat %+v", n, st)
				}
				if got := readAll(t, s, path, id); !bytes.Equal(got, data) {
					t.Errorf("size %d: content differs (got %d bytes)", n, len(got))
				}
				if err := s.Verify(path, id); err != nil {
					t.Errorf("size %d: Verify: %v", n, err)
				}
				checkSeekReadAt(t, s, path, id, data)
			}
		})
	}
}

func checkSeekReadAt(t *testing.T, s *Store, path, id string, data []byte) {
	t.Helper()
	b, err := s.Open(path, id)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	n := int64(len(data))
	if b.Size() != n {
		t.Errorf("Size() = %d, want %d", b.Size(), n)
	}
	if pos, err := b.Seek(0, io.SeekEnd); err != nil || pos != n {
		t.Errorf("Seek end = %d, %v; want %d", pos, err, n)
	}
	if n == 0 {
		return
	}
	mid := n / 2
	if pos, err := b.Seek(mid, io.SeekStart); err != nil || pos != mid {
		t.Fatalf("Seek mid = %d, %v", pos, err)
	}
	rest, err := io.ReadAll(b)
	if err != nil || !bytes.Equal(rest, data[mid:]) {
		t.Errorf("read after Seek: %d bytes, %v", len(rest), err)
	}
	p := make([]byte, 10)
	k, err := b.ReadAt(p, mid)
	want := data[mid:min(mid+10, n)]
	if k != len(want) || !bytes.Equal(p[:k], want) || (k < 10 && err != io.EOF) {
		t.Errorf("ReadAt(%d) = %d, %v", mid, k, err)
	}
	if k, err := b.ReadAt(p, n); k != 0 || err != io.EOF {
		t.Errorf("ReadAt(end) = %d, %v; want 0, EOF", k, err)
	}
}

func TestWriteSmallChunks(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{NoSync: true})
	data := content(300<<10+7, 9)
	w, err := s.Create("p", "x")
	if err != nil {
		t.Fatal(err)
	}
	// Tiny buffered writes, a write larger than the buffer, then ReadFrom
	// with a reader returning short reads.
	for off := 0; off < 994; off += 7 {
		if _, err := w.Write(data[off : off+7]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Write(data[994 : 200<<10]); err != nil {
		t.Fatal(err)
	}
	if n, err := w.ReadFrom(iotestHalf{bytes.NewReader(data[200<<10:])}); err != nil || n != int64(len(data)-200<<10) {
		t.Fatalf("ReadFrom = %d, %v", n, err)
	}
	info, err := w.CommitVerify(strings.ToUpper(sumHex(data)), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := w.Commit(); err != nil || again != info {
		t.Errorf("second Commit = %+v, %v; want same info", again, err)
	}
	if got := readAll(t, s, "p", "x"); !bytes.Equal(got, data) {
		t.Error("content differs")
	}
	if _, err := w.Write([]byte("more")); err == nil {
		t.Error("Write after Commit succeeded")
	}
}

// iotestHalf returns at most half of the requested bytes per Read.
type iotestHalf struct{ r io.Reader }

func (h iotestHalf) Read(p []byte) (int, error) { return h.r.Read(p[:(len(p)+1)/2]) }

func TestCommitVerifyMismatch(t *testing.T) {
	data := []byte("hello, world")
	tests := []struct {
		name string
		sum  string
		size int64
	}{
		{"wrong sum", sumHex([]byte("other")), int64(len(data))},
		{"wrong size", sumHex(data), int64(len(data)) + 1},
		{"empty sum", "", int64(len(data))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, Options{NoSync: true})
			w, err := s.Create("p", "id1")
			if err != nil {
				t.Fatal(err)
			}
			w.Write(data)
			_, err = w.CommitVerify(tt.sum, tt.size)
			if !errors.Is(err, ErrChecksum) {
				t.Fatalf("CommitVerify err = %v, want ErrChecksum", err)
			}
			if !strings.Contains(err.Error(), sumHex(data)) {
				t.Errorf("error %q lacks the actual sum", err)
			}
			w.Abort()
			if _, err := s.Open("p", "id1"); !errors.Is(err, ErrNotFound) {
				t.Errorf("Open after failed verify: %v, want ErrNotFound", err)
			}
			if n, b := s.Usage(); n != 0 || b != 0 {
				t.Errorf("Usage = %d, %d", n, b)
			}
			if files := filesUnder(t, filepath.Join(dir, "blobs")); len(files) != 0 {
				t.Errorf("files left in blobs: %v", files)
			}
			if files := filesUnder(t, filepath.Join(dir, "tmp")); len(files) != 0 {
				t.Errorf("files left in tmp: %v", files)
			}
		})
	}
}

func TestAbortAndTmpLeftovers(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Create("p", "a")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(content(200<<10, 1))
	w.Abort()
	w.Abort() // twice is fine
	if _, err := w.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
	if files := filesUnder(t, filepath.Join(dir, "tmp")); len(files) != 0 {
		t.Errorf("Abort left %v", files)
	}
	if _, err := s.Open("p", "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open aborted blob: %v", err)
	}
	put(t, s, "p", "b", []byte("kept"))
	// A Writer left open when the process dies.
	w2, _ := s.Create("p", "c")
	w2.Write([]byte("half"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Simulated crash leftovers.
	tmp := filepath.Join(dir, "tmp")
	os.WriteFile(filepath.Join(tmp, "blob-123"), []byte("junk"), 0o644)
	os.MkdirAll(filepath.Join(tmp, "sub", "dir"), 0o755)
	os.WriteFile(filepath.Join(tmp, "sub", "dir", "f"), []byte("junk"), 0o644)

	s2 := openStore(t, dir, Options{NoSync: true})
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("tmp not emptied at Open: %d entries", len(ents))
	}
	if got := readAll(t, s2, "p", "b"); string(got) != "kept" {
		t.Errorf("committed blob = %q", got)
	}
	if n, b := s2.Usage(); n != 1 || b != 4 {
		t.Errorf("Usage = %d, %d; want 1, 4", n, b)
	}
}

func TestPathsStayInside(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	s := openStore(t, dir, Options{NoSync: true, CacheBytes: 1 << 20})
	const unit = "é/.."
	long := strings.Repeat(unit, 1024/len(unit)) + strings.Repeat("x", 1024%len(unit))
	if len(long) != 1024 {
		t.Fatalf("long path is %d bytes", len(long))
	}
	paths := []string{
		"a/b", "a/b/c", "a", "/abs/path", "..", "../../../etc/passwd", "a/../../b",
		".", "", "日本語/ファイル.txt", "with space\tand\ttabs", "C:\\windows\\x",
		long, "\xff\xfe invalid utf8", "a\nb",
	}
	for i, p := range paths {
		put(t, s, p, "v1", []byte(p+"#"+string(rune('0'+i%10))))
	}
	for i, p := range paths {
		want := p + "#" + string(rune('0'+i%10))
		if got := readAll(t, s, p, "v1"); string(got) != want {
			t.Errorf("path %q: got %q, want %q", p, got, want)
		}
		infos, err := s.List(p)
		if err != nil || len(infos) != 1 || infos[0].Path != p {
			t.Errorf("List(%q) = %+v, %v", p, infos, err)
		}
	}
	// Walk returns the exact original paths.
	var walked []string
	if err := s.Walk(func(i Info) error { walked = append(walked, i.Path); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(walked)
	want := slices.Clone(paths)
	slices.Sort(want)
	if !slices.Equal(walked, want) {
		t.Errorf("Walk paths = %q, want %q", walked, want)
	}
	// Nothing was created outside dir, and inside only the layout.
	if ents, _ := os.ReadDir(parent); len(ents) != 1 || ents[0].Name() != "store" {
		t.Errorf("entries in parent: %v", ents)
	}
	for _, f := range filesUnder(t, dir) {
		if f == "LOCK" || strings.HasPrefix(f, "segments"+string(filepath.Separator)) && strings.HasSuffix(f, ".seg") {
			continue
		}
		parts := strings.Split(f, string(filepath.Separator))
		if len(parts) != 4 || parts[0] != "blobs" || len(parts[1]) != 2 || len(parts[2]) != 64 ||
			!strings.HasPrefix(parts[2], parts[1]) || (parts[3] != "v1" && parts[3] != "v1.meta") {
			t.Errorf("unexpected file %s", f)
		}
	}
}

func TestBadID(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{NoSync: true})
	for _, id := range []string{"", ".", "..", "a/b", "a.b", "a b", "é", strings.Repeat("a", 65), "x\x00"} {
		if _, err := s.Create("p", id); !errors.Is(err, ErrBadID) {
			t.Errorf("Create(%q) err = %v", id, err)
		}
		if _, err := s.Open("p", id); !errors.Is(err, ErrBadID) {
			t.Errorf("Open(%q) err = %v", id, err)
		}
		if _, err := s.Stat("p", id); !errors.Is(err, ErrBadID) {
			t.Errorf("Stat(%q) err = %v", id, err)
		}
		if err := s.Remove("p", id); !errors.Is(err, ErrBadID) {
			t.Errorf("Remove(%q) err = %v", id, err)
		}
		if err := s.RemoveExcept("p", "ok", id); !errors.Is(err, ErrBadID) {
			t.Errorf("RemoveExcept(%q) err = %v", id, err)
		}
	}
	for _, id := range []string{"a", "A-z_09", strings.Repeat("Z", 64)} {
		put(t, s, "p", id, []byte(id))
	}
}

func TestRemoveExceptWalkUsage(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true, CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{"v1": 10, "v2": 0, "v3": 70 << 10, "v4": 5}
	for id, n := range sizes {
		put(t, s, "f/x", id, content(n, 1))
	}
	put(t, s, "f/x/y", "v1", content(33, 2)) // same ids, nested path
	put(t, s, "g", "v9", content(7, 3))
	readAll(t, s, "f/x", "v1") // cached
	if n, b := s.Usage(); n != 6 || b != 10+70<<10+5+33+7 {
		t.Errorf("Usage = %d, %d", n, b)
	}

	if err := s.RemoveExcept("f/x", "v3", "v4", "nonexistent"); err != nil {
		t.Fatal(err)
	}
	infos, err := s.List("f/x")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, i := range infos {
		ids = append(ids, i.ID)
		if i.Sum != sumHex(content(sizes[i.ID], 1)) || i.Size != int64(sizes[i.ID]) {
			t.Errorf("List info %+v", i)
		}
	}
	if !slices.Equal(ids, []string{"v3", "v4"}) {
		t.Errorf("ids after RemoveExcept = %v", ids)
	}
	// IDs lists the same blobs from the names alone (sidecars left out).
	if got, err := s.IDs("f/x"); err != nil || !slices.Equal(got, []string{"v3", "v4"}) {
		t.Errorf("IDs(f/x) = %v, %v; want [v3 v4]", got, err)
	}
	if got, err := s.IDs("never/written"); err != nil || got != nil {
		t.Errorf("IDs(never/written) = %v, %v; want none", got, err)
	}
	if _, err := s.Open("f/x", "v1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open removed (cached) blob: %v", err)
	}
	if _, err := s.Stat("f/x", "v2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat removed blob: %v", err)
	}
	if got := readAll(t, s, "f/x/y", "v1"); !bytes.Equal(got, content(33, 2)) {
		t.Error("nested path blob damaged")
	}
	wantBytes := int64(70<<10 + 5 + 33 + 7)
	if n, b := s.Usage(); n != 4 || b != wantBytes {
		t.Errorf("Usage after GC = %d, %d; want 4, %d", n, b, wantBytes)
	}
	if err := s.Remove("g", "v9"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("g", "v9"); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if err := s.Remove("never", "v1"); err != nil {
		t.Errorf("Remove of unknown path: %v", err)
	}
	wantBytes -= 7
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir, Options{NoSync: true})
	if n, b := s.Usage(); n != 3 || b != wantBytes {
		t.Errorf("Usage after reopen = %d, %d; want 3, %d", n, b, wantBytes)
	}
	got := map[string]Info{}
	err = s.Walk(func(i Info) error { got[i.Path+"|"+i.ID] = i; return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"f/x|v3": 70 << 10, "f/x|v4": 5, "f/x/y|v1": 33}
	if len(got) != len(want) {
		t.Errorf("Walk got %d blobs: %v", len(got), got)
	}
	for k, size := range want {
		if got[k].Size != size {
			t.Errorf("Walk %s: %+v", k, got[k])
		}
	}
	stop := errors.New("stop")
	calls := 0
	if err := s.Walk(func(Info) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("Walk stop: err %v after %d calls", err, calls)
	}
	// The emptied path directory of "g" is gone.
	if err := s.RemoveExcept("f/x"); err != nil {
		t.Fatal(err)
	}
	if infos, err := s.List("f/x"); err != nil || len(infos) != 0 {
		t.Errorf("List after RemoveExcept() = %v, %v", infos, err)
	}
	if l := s.locate("f/x"); dirExists(l.dir) {
		t.Error("empty path directory kept")
	}
}

func dirExists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestRecommit(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{CacheBytes: 1 << 20}) // with fsync
	a, b := []byte("version A"), []byte("version B, longer")
	put(t, s, "p", "v", a)
	readAll(t, s, "p", "v") // fill cache
	put(t, s, "p", "v", a)  // same content: succeeds
	if n, sz := s.Usage(); n != 1 || sz != int64(len(a)) {
		t.Errorf("Usage after same-content recommit = %d, %d", n, sz)
	}
	put(t, s, "p", "v", b) // different content replaces
	if got := readAll(t, s, "p", "v"); !bytes.Equal(got, b) {
		t.Errorf("after replace got %q", got)
	}
	if st, _ := s.Stat("p", "v"); st.Sum != sumHex(b) {
		t.Errorf("Stat sum after replace = %s", st.Sum)
	}
	if n, sz := s.Usage(); n != 1 || sz != int64(len(b)) {
		t.Errorf("Usage after replace = %d, %d", n, sz)
	}
}

func TestClosed(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil {
		t.Error("second Open of a locked dir succeeded")
	}
	put(t, s, "p", "a", []byte("x"))
	w, _ := s.Create("p", "b")
	w.Write([]byte("y"))
	s.Close()
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := w.Commit(); !errors.Is(err, ErrClosed) {
		t.Errorf("Commit after Close: %v", err)
	}
	if _, err := s.Open("p", "a"); !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Close: %v", err)
	}
	if _, err := s.Create("p", "c"); !errors.Is(err, ErrClosed) {
		t.Errorf("Create after Close: %v", err)
	}
	if err := s.Remove("p", "a"); !errors.Is(err, ErrClosed) {
		t.Errorf("Remove after Close: %v", err)
	}
	if files := filesUnder(t, filepath.Join(dir, "tmp")); len(files) != 0 {
		t.Errorf("tmp after failed Commit: %v", files)
	}
}

func TestDiskFree(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{NoSync: true})
	free, total, err := s.DiskFree()
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 || free > total {
		t.Errorf("DiskFree = %d, %d", free, total)
	}
}

// Remove with several ids removes those (small and large blobs alike)
// and nothing else: a blob stored after the caller judged the others
// stays (garbage collection removes only what it listed).
func TestRemoveSeveral(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, n := range map[string]int{"v1": 10, "v2": 70 << 10, "v3": 5} {
		put(t, s, "f", id, content(n, 1))
	}
	if err := s.Remove("f", "v1", "v2", "absent"); err != nil {
		t.Fatal(err)
	}
	if ids, err := s.IDs("f"); err != nil || !slices.Equal(ids, []string{"v3"}) {
		t.Fatalf("IDs after Remove(v1, v2) = %v, %v; want [v3]", ids, err)
	}
	if err := s.Remove("f", "v3", "bad/id"); !errors.Is(err, ErrBadID) {
		t.Fatalf("Remove with a bad id: %v, want ErrBadID", err)
	}
}
