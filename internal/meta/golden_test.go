package meta_test

import (
	"bufio"
	"bytes"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/meta/metatest"
)

// testdata/snapshot-v2.bin and testdata/log-v1.jsonl were written by the
// binary before namespaces (commit 7eac01a): a snapshot of a small state and
// the log entries that built it, one per line. This binary, with parts
// registered, restores the one and applies the other to the same state, and
// writes that state back byte for byte (format version 2: no section).
func TestGoldenOldSnapshotAndLog(t *testing.T) {
	snap, err := os.ReadFile("testdata/snapshot-v2.bin")
	if err != nil {
		t.Fatal(err)
	}
	restored := meta.NewFSM(metatest.New(2))
	if err := restore(restored, snap); err != nil {
		t.Fatalf("restore the old snapshot: %v", err)
	}
	f, err := os.Open("testdata/log-v1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	replayed := meta.NewFSM(metatest.New(2))
	sc := bufio.NewScanner(f)
	for i := uint64(1); sc.Scan(); i++ {
		if r := applyEntry(t, replayed, i, bytes.Clone(sc.Bytes())); r.Err != nil {
			t.Fatalf("old entry %d refused: %v", i, r.Err)
		}
	}
	if restored.Applied() != 6 || replayed.Applied() != 6 {
		t.Fatalf("applied %d and %d, want 6", restored.Applied(), replayed.Applied())
	}
	x := restored.File("docs/x")
	if x == nil || x.Version != 4 || x.BlobID != "b1" || !slices.Equal(x.Valid, []string{"a", "b"}) || x.Holder != "a" {
		t.Fatalf("docs/x restored as %+v", x)
	}
	if y := restored.File("docs/y"); y == nil || y.Holder != "b" {
		t.Fatalf("docs/y restored as %+v", y)
	}
	for _, p := range []string{"docs/x", "docs/y"} {
		if a, b := restored.File(p), replayed.File(p); !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: restored %+v, replayed %+v", p, a, b)
		}
	}
	var rc, pc map[string]string
	var rn, pn []meta.Node
	var idem bool
	restored.Read(func(s *meta.State) {
		rc, rn = s.Config(), s.Nodes()
		_, idem = s.Idem("k1")
	})
	replayed.Read(func(s *meta.State) { pc, pn = s.Config(), s.Nodes() })
	if rc[meta.CfgReplication] != "2" || !reflect.DeepEqual(rc, pc) || !reflect.DeepEqual(rn, pn) || len(rn) != 2 || !idem {
		t.Fatalf("settings %v / %v, nodes %v / %v, idempotency key kept %v", rc, pc, rn, pn, idem)
	}
	if again := snapshotBytes(t, replayed); !bytes.Equal(again, snap) {
		t.Fatalf("the same state is written differently now (%d bytes, was %d): older binaries could not read it", len(again), len(snap))
	}
}
