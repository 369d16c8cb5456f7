package meta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// snapshotAs snapshots m in the current (binary) format or in the first
// one (JSON), as a node running an older binary wrote it.
func snapshotAs(t *testing.T, m *FSM, format string) io.ReadCloser {
	t.Helper()
	if format == "binary" {
		return snapshotTo(t, m).reader()
	}
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(snap.(*snapshotData))
	if err != nil {
		t.Fatal(err)
	}
	return io.NopCloser(bytes.NewReader(b))
}

// A snapshot written by an older binary (JSON) restores the same state
// as the binary format.
func TestRestoreJSONSnapshot(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			m, _ := buildRandomFSM(t, seed)
			bin, js := NewFSM(), NewFSM()
			if err := bin.Restore(snapshotAs(t, m, "binary")); err != nil {
				t.Fatal(err)
			}
			if err := js.Restore(snapshotAs(t, m, "json")); err != nil {
				t.Fatal(err)
			}
			f1, n1, c1, l1, s1, a1 := stateDump(t, bin)
			f2, n2, c2, l2, s2, a2 := stateDump(t, js)
			if !reflect.DeepEqual(f1, f2) || !reflect.DeepEqual(n1, n2) || !mapsEqual(c1, c2) || l1 != l2 || s1 != s2 || a1 != a2 {
				t.Fatal("JSON and binary snapshots restore different states")
			}
			checkIdemEqual(t, m, js)
		})
	}
}

func checkIdemEqual(t *testing.T, a, b *FSM) {
	t.Helper()
	var ra, rb []IdemRecord
	a.Read(func(s *State) { ra = s.idemRecords() })
	b.Read(func(s *State) { rb = s.idemRecords() })
	if len(ra) == 0 || !slices.Equal(ra, rb) {
		t.Fatalf("idempotency records %v restored as %v", ra, rb)
	}
}

// Every field survives the binary format, including values it encodes
// specially (raw sums, shared path prefixes, node ID and set references)
// and those it must not mistake for them.
func TestSnapshotRoundTripOddRecords(t *testing.T) {
	sum := SHA256{0x01, 0x23, 31: 0xef}
	files := []*File{
		{Path: "a", Version: 3, BlobID: "b1", Size: 10, Sum: sum, Modified: StampOf(testTime), Valid: []string{"n1", "n2"}},
		{Path: "a/b", Version: 4, Sum: SHA256{31: 1}, MD5: MD5{15: 1}, Valid: []string{"n1", "n2"}},
		{Path: "a/bc", Version: 5, Modified: StampOf(time.Unix(-9e9, 999_999_999))},
		{Path: "a/bd", Version: 6, MD5: MD5{0xff}, Holder: "n3", Grant: 6, Valid: []string{"n3"}},
		{Path: "b", Version: 7, Deleted: true, Pending: true, Unfenced: &[]string{"n1", "n2", "n3"}, Modified: StampOf(testTime.Add(time.Nanosecond))},
		{Path: "b\x00é", Version: 8, Size: -1, Sum: sum, Pending: true, Unfenced: &[]string{"n1"}, Holder: "n1", Grant: 8,
			Valid: []string{"n1", "n2"}},
		{Path: strings.Repeat("x", 300), Version: 1 << 62, Valid: []string{"", "n2"}},
	}
	m := NewFSM()
	for _, f := range files {
		m.state.put(f.clone())
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		m.state.restoreNode(Node{ID: id, PeerAddr: id + ":1", State: NodeActive, Since: testTime})
	}
	m.state.config[CfgReplication] = "2"
	m.state.rememberIdem(IdemRecord{Key: "k", Kind: KindCommit, Path: "a", Version: 3})
	m.applied = 9
	m2 := NewFSM()
	if err := m2.Restore(snapshotTo(t, m).reader()); err != nil {
		t.Fatal(err)
	}
	for _, want := range files {
		got := m2.File(want.Path)
		if got == nil || !reflect.DeepEqual(normFile(t, got), normFile(t, want)) {
			t.Fatalf("record\n%+v\nrestored as\n%+v", want, got)
		}
	}
	if a := m2.File("a"); unsafe.StringData(a.Valid[0]) != unsafe.StringData(m2.File("b\x00é").Holder) {
		t.Fatal("restored records do not share node IDs")
	}
	f1, n1, c1, _, _, a1 := stateDump(t, m)
	f2, n2, c2, _, _, a2 := stateDump(t, m2)
	if !reflect.DeepEqual(f1, f2) || !reflect.DeepEqual(n1, n2) || !mapsEqual(c1, c2) || a1 != a2 {
		t.Fatal("states differ after a round trip")
	}
	checkIdemEqual(t, m, m2)
}

// A binary snapshot cut short, followed by anything, or of an unknown
// version is refused, and the state is left as it was.
func TestRestoreDamagedSnapshot(t *testing.T) {
	good := snapshotTo(t, buildSmallFSM(t)).Bytes()
	version := len(snapMagic)
	damaged := map[string][]byte{
		"trailing byte":   append(slices.Clone(good), 0),
		"newer version":   append(append([]byte(snapMagic), snapVersion+1), good[version+1:]...),
		"bad end marker":  append(slices.Clone(good[:len(good)-1]), 'x'),
		"magic only":      []byte(snapMagic),
		"huge string len": append([]byte(snapMagic), snapVersion, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f),
	}
	for n := len(snapMagic) + 1; n < len(good); n++ {
		damaged[fmt.Sprint("cut at ", n)] = good[:n]
	}
	for name, b := range damaged {
		t.Run(name, func(t *testing.T) {
			m, last := buildRandomFSM(t, 5)
			before, _, _, _, _, _ := stateDump(t, m)
			err := m.Restore(io.NopCloser(bytes.NewReader(b)))
			if err == nil {
				t.Fatal("Restore accepted a damaged snapshot")
			}
			if name == "newer version" && !strings.Contains(err.Error(), fmt.Sprint("version ", snapVersion+1)) {
				t.Fatalf("error %q does not name the version", err)
			}
			if after, _, _, _, _, a := stateDump(t, m); a != last || !reflect.DeepEqual(before, after) {
				t.Fatal("failed Restore changed the state")
			}
		})
	}
}

// buildSmallFSM holds a few records of every kind, for tests that try
// every damaged variant of its snapshot.
func buildSmallFSM(t testing.TB) *FSM {
	t.Helper()
	m := NewFSM()
	h := &metaHarness{t: t, s: m.state}
	h.addNode("a")
	h.addNode("b")
	h.write("x", "a", "b")
	h.write("y", "a", "b")
	h.acquire("z", "b")
	h.must(Command{Kind: KindDelete, Path: "y", Node: "a", Idem: "del-y"})
	m.applied = h.idx
	return m
}

func TestSnapshotSmallerThanJSON(t *testing.T) {
	m, _ := buildRandomFSM(t, 1)
	bin := snapshotTo(t, m).Len()
	js, _ := io.ReadAll(snapshotAs(t, m, "json"))
	if bin*2 > len(js) {
		t.Fatalf("binary snapshot %d bytes, JSON %d: expected less than half", bin, len(js))
	}
}

// The idempotency table, once full and wrapped around, restores in the
// same order: both machines then forget the same key next.
func TestIdemOrderSurvivesRestore(t *testing.T) {
	m := NewFSM()
	h := &metaHarness{t: t, s: m.state}
	h.addNode("a")
	g := h.acquire("x", "a")
	const extra = 5
	for i := 1; i <= MaxIdem+extra; i++ {
		h.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: fmt.Sprint("k", i)})
	}
	m.applied = h.idx
	for _, format := range []string{"binary", "json"} {
		t.Run(format, func(t *testing.T) {
			m2 := NewFSM()
			if err := m2.Restore(snapshotAs(t, m, format)); err != nil {
				t.Fatal(err)
			}
			checkIdemEqual(t, m, m2)
			h2 := &metaHarness{t: t, s: m2.state, idx: h.idx}
			h2.must(Command{Kind: KindCommit, Path: "x", Node: "a", Grant: g, Idem: "next"})
			for i, want := range map[int]bool{extra + 1: false, extra + 2: true} {
				if _, ok := m2.state.Idem(fmt.Sprint("k", i)); ok != want {
					t.Fatalf("after one more key, k%d remembered = %v, want %v", i, ok, want)
				}
			}
		})
	}
}

// Restore never panics, whatever it is given, and what it accepts
// snapshots again to the same bytes' state.
func FuzzRestore(f *testing.F) {
	m := buildSmallFSM(f)
	var sink bufSink
	snap, _ := m.Snapshot()
	snap.Persist(&sink)
	f.Add(sink.Bytes())
	js, _ := json.Marshal(snap.(*snapshotData))
	f.Add(js)
	f.Add([]byte(snapMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := NewFSM()
		if err := m.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
			return
		}
		m2 := NewFSM()
		if err := m2.Restore(snapshotTo(t, m).reader()); err != nil {
			t.Fatalf("a restored state's snapshot does not restore: %v", err)
		}
		m2.Read(func(s *State) { checkCounts(t, s) })
	})
}
