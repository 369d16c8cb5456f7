package meta_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/meta/metatest"
)

func applyEntry(t *testing.T, m *meta.FSM, idx uint64, data []byte) *meta.Result {
	t.Helper()
	r, ok := m.Apply(&raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: data}).(*meta.Result)
	if !ok || r.Index != idx {
		t.Fatalf("entry %d: result %+v", idx, r)
	}
	return r
}

func encode(t *testing.T, x interface{ Encode() ([]byte, error) }) []byte {
	t.Helper()
	b, err := x.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func counterValue(m *meta.FSM, name string) (v int64) {
	m.ReadPart(metatest.NS, func(p meta.Part) { v = p.(*metatest.Counter).Value(name) })
	return v
}

// oldLog is a log as today's binary (before namespaces) writes it,
// verbatim: core commands as JSON.
var oldLog = []string{
	`{"kind":"node_upsert","info":{"id":"a","peer":"a:1","http":"a:2","state":"active","since":"2026-01-02T03:04:05Z"}}`,
	`{"kind":"acquire","path":"docs/x","node":"a","time":"2026-01-02T03:04:06Z"}`,
	`{"kind":"commit","path":"docs/x","node":"a","grant":2,"blob_id":"b1","size":3,"sha256":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad","time":"2026-01-02T03:04:07Z"}`,
	`{"kind":"set_config","key":"replication","value":"2","time":"2026-01-02T03:04:08Z"}`,
}

// One log mixing the old entries and a new namespace's: a binary with the
// part applies them all; a binary without it (an older one) applies the
// core entries alike and refuses the op, and so does one whose part is a
// version behind for a newer op. Every node of one version decides alike.
func TestNamespacedLog(t *testing.T) {
	var log [][]byte
	for _, s := range oldLog {
		log = append(log, []byte(s))
	}
	log = append(log, encode(t, metatest.AddOp("hits", 5)), encode(t, metatest.AddOp("hits", 2)), encode(t, metatest.ResetOp()))

	tests := []struct {
		name     string
		parts    []meta.Part
		wantErrs map[int]error // by log position
		hits     int64         // after the adds
	}{
		{"new binary", []meta.Part{metatest.New(2)}, nil, 7},
		{"old binary, no part", nil, map[int]error{4: meta.ErrUnknownNamespace, 5: meta.ErrUnknownNamespace, 6: meta.ErrUnknownNamespace}, 0},
		{"part one version behind", []meta.Part{metatest.New(1)}, map[int]error{6: meta.ErrUnknownNamespace}, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := meta.NewFSM(tc.parts...)
			for i, e := range log {
				r := applyEntry(t, m, uint64(i+1), e)
				want := tc.wantErrs[i]
				if want == nil && r.Err != nil || want != nil && !errors.Is(r.Err, want) {
					t.Fatalf("entry %d: err %v, want %v", i+1, r.Err, want)
				}
				if i == 5 && want == nil && counterValue(m, "hits") != tc.hits {
					t.Fatalf("hits = %d after the adds, want %d", counterValue(m, "hits"), tc.hits)
				}
			}
			if f := m.File("docs/x"); f == nil || f.Version != 3 || f.BlobID != "b1" {
				t.Fatalf("the old entries did not apply: %+v", f)
			}
			var cfg meta.Config
			m.Read(func(s *meta.State) { cfg = meta.ParseConfig(s.Config()) })
			if cfg.Replicas != 2 {
				t.Fatalf("replication = %d, want 2", cfg.Replicas)
			}
			if m.Applied() != uint64(len(log)) {
				t.Fatalf("applied %d", m.Applied())
			}
		})
	}
}

func TestDecodeOpRefusesBadOps(t *testing.T) {
	for name, data := range map[string][]byte{
		"core namespace": append([]byte{1}, `{"ns":"core","v":1,"kind":"x"}`...),
		"no namespace":   append([]byte{1}, `{"v":1,"kind":"x"}`...),
		"version 0":      append([]byte{1}, `{"ns":"counter","kind":"x"}`...),
		"not json":       {1, '{'},
	} {
		t.Run(name, func(t *testing.T) {
			r := applyEntry(t, meta.NewFSM(metatest.New(2)), 1, data)
			if !errors.Is(r.Err, meta.ErrBadCommand) {
				t.Fatalf("err %v, want ErrBadCommand", r.Err)
			}
		})
	}
}

func snapshotBytes(t *testing.T, m *meta.FSM) []byte {
	t.Helper()
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}

type memSink struct{ bytes.Buffer }

func (s *memSink) ID() string    { return "test" }
func (s *memSink) Close() error  { return nil }
func (s *memSink) Cancel() error { return nil }

// formatVersion reads a binary snapshot's format version.
func formatVersion(t *testing.T, b []byte) uint64 {
	t.Helper()
	const magic = "\x00mure-snapshot\n"
	if !bytes.HasPrefix(b, []byte(magic)) {
		t.Fatalf("not a binary snapshot: %q", b[:min(len(b), 20)])
	}
	v, _ := binary.Uvarint(b[len(magic):])
	return v
}

func restore(m *meta.FSM, b []byte) error { return m.Restore(io.NopCloser(bytes.NewReader(b))) }

// A part's state travels in its own section; while no part holds
// anything the snapshot keeps the format older binaries read (version 2),
// and a snapshot of an older binary restores with every part empty.
func TestSnapshotSections(t *testing.T) {
	m := meta.NewFSM(metatest.New(2))
	for i, s := range oldLog {
		applyEntry(t, m, uint64(i+1), []byte(s))
	}
	core := snapshotBytes(t, m)
	if v := formatVersion(t, core); v != 2 {
		t.Fatalf("without sections the format is v%d, want 2", v)
	}
	old := meta.NewFSM() // an older binary: no parts
	if err := restore(old, core); err != nil {
		t.Fatalf("an older binary cannot read the snapshot: %v", err)
	}

	applyEntry(t, m, 5, encode(t, metatest.AddOp("hits", 9)))
	full := snapshotBytes(t, m)
	if v := formatVersion(t, full); v != 3 {
		t.Fatalf("with a section the format is v%d, want 3", v)
	}
	back := meta.NewFSM(metatest.New(2))
	applyEntry(t, back, 1, encode(t, metatest.AddOp("stale", 1)))
	if err := restore(back, full); err != nil {
		t.Fatal(err)
	}
	if counterValue(back, "hits") != 9 || counterValue(back, "stale") != 0 || back.Applied() != 5 {
		t.Fatalf("restored hits=%d stale=%d applied=%d", counterValue(back, "hits"), counterValue(back, "stale"), back.Applied())
	}
	if f := back.File("docs/x"); f == nil || f.Version != 3 {
		t.Fatalf("core state lost: %+v", f)
	}
	// The old snapshot empties the part.
	if err := restore(back, core); err != nil || counterValue(back, "hits") != 0 {
		t.Fatalf("restore of a section-less snapshot: %v, hits %d", err, counterValue(back, "hits"))
	}

	t.Run("unknown section", func(t *testing.T) {
		err := restore(meta.NewFSM(), full)
		if err == nil || !strings.Contains(err.Error(), `"counter"`) {
			t.Fatalf("an older binary restored a section it cannot read: %v", err)
		}
	})
}

// Every subscriber of the change feed sees every change, whenever it drains.
func TestFeedSubscribers(t *testing.T) {
	m := meta.NewFSM()
	applyEntry(t, m, 1, []byte(oldLog[0]))
	a, b := m.Subscribe(), m.Subscribe()
	applyEntry(t, m, 2, []byte(oldLog[1]))
	if p, _ := a.Drain(); len(p) != 1 || p[0] != "docs/x" {
		t.Fatalf("a drained %v", p)
	}
	applyEntry(t, m, 3, []byte(oldLog[2]))
	if p, _ := a.Drain(); len(p) != 1 {
		t.Fatalf("a drained %v after the commit", p)
	}
	if p, _ := b.Drain(); len(p) != 1 || p[0] != "docs/x" {
		t.Fatalf("b drained %v", p)
	}
	if p, _ := m.DrainChanges(); len(p) != 1 {
		t.Fatalf("the default feed drained %v", p)
	}
	m.Unsubscribe(b)
	applyEntry(t, m, 4, []byte(oldLog[3]))
	if _, rescan := a.Drain(); !rescan {
		t.Fatal("a setting change did not ask a for a rescan")
	}
	if p, rescan := b.Drain(); len(p) != 0 || rescan {
		t.Fatalf("an unsubscribed feed still collects: %v %v", p, rescan)
	}
}

func TestCheckSupported(t *testing.T) {
	supports := map[string]meta.Supports{
		"a": {meta.NSCore: 1, "counter": 2},
		"b": {meta.NSCore: 1, "counter": 1},
		// c advertises nothing: an older binary.
	}
	tests := []struct {
		ns      string
		v       int
		voters  []string
		lacking string
	}{
		{meta.NSCore, 1, []string{"a", "b", "c"}, ""},
		{"counter", 1, []string{"a", "b"}, ""},
		{"counter", 2, []string{"a", "b"}, "b (v1)"},
		{"counter", 1, []string{"a", "c"}, "c (none)"},
	}
	for _, tc := range tests {
		t.Run(tc.ns+tc.lacking, func(t *testing.T) {
			err := meta.CheckSupported(tc.ns, tc.v, tc.voters, supports)
			if tc.lacking == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, meta.ErrUnsupported) || !strings.Contains(err.Error(), tc.lacking) {
				t.Fatalf("err %v, want ErrUnsupported naming %s", err, tc.lacking)
			}
		})
	}
}

func TestSupportsString(t *testing.T) {
	s := meta.Supports{"counter": 2, meta.NSCore: 1}
	back, err := meta.ParseSupports(s.String())
	if err != nil || s.String() != "core:1,counter:2" || len(back) != 2 || back["counter"] != 2 {
		t.Fatalf("%q parsed as %v, %v", s.String(), back, err)
	}
	if l, _ := meta.ParseSupports(""); l[meta.NSCore] != 1 || len(l) != 1 {
		t.Fatalf("empty = %v", l)
	}
	for _, bad := range []string{"core", "core:0", ":1", "core:x"} {
		if _, err := meta.ParseSupports(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
