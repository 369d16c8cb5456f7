package sessions

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

func TestPartApplyAndSnapshot(t *testing.T) {
	p := NewPart()
	s := Session{ID: "a1", User: "alice", Kind: "shell", Node: "n1", State: StateRunning, Created: time.Unix(100, 0).UTC(),
		Command: []string{"top", "-b"}, CredentialHash: "h1"}
	steps := []struct {
		name string
		op   meta.Op
		err  error
	}{
		{"add", AddOp(s), nil},
		{"add again (a retried proposal)", AddOp(s), nil},
		{"another under its ID", AddOp(Session{ID: "a1", User: "bob", Kind: "shell", Node: "n1", State: StateStarting}), meta.ErrPrecondition},
		{"add without user", AddOp(Session{ID: "b", Kind: "shell", Node: "n1"}), meta.ErrBadCommand},
		{"move", SetOp(Move{ID: "a1", Node: "n2", State: StateStarting, Restarted: true}), nil},
		{"new credential", SetOp(Move{ID: "a1", Node: "n2", State: StateStarting, CredentialHash: "h2"}), nil},
		{"move unknown", SetOp(Move{ID: "zz", Node: "n2", State: StateLost}), meta.ErrNotFound},
		{"unknown op", meta.Op{NS: NS, V: 1, Kind: "rename", Body: []byte(`{}`)}, meta.ErrBadCommand},
		{"garbage", meta.Op{NS: NS, V: 1, Kind: OpAdd, Body: []byte(`{`)}, meta.ErrBadCommand},
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			res := p.Apply(uint64(i+1), st.op)
			if !errors.Is(res.Err, st.err) || (st.err == nil) != (res.Err == nil) {
				t.Fatalf("err %v, want %v", res.Err, st.err)
			}
		})
	}
	got, ok := p.Get("a1")
	if !ok || got.Node != "n2" || got.State != StateStarting || got.Restarts != 1 || got.User != "alice" || got.CredentialHash != "h2" || len(got.Command) != 2 {
		t.Fatalf("record %+v", got)
	}
	snap, err := p.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	q := NewPart()
	if err := q.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if r, ok := q.Get("a1"); !ok || !reflect.DeepEqual(r, got) {
		t.Fatalf("restored %+v, want %+v", r, got)
	}
	if res := q.Apply(9, DeleteOp("a1")); res.Err != nil {
		t.Fatal(res.Err)
	}
	if snap, _ := q.Snapshot(); snap != nil {
		t.Fatalf("an empty part snapshots %q, want nothing", snap)
	}
	if err := q.Restore(nil); err != nil || len(q.All()) != 0 {
		t.Fatalf("restore of nothing: %v, %d records", err, len(q.All()))
	}
}

// TestOpVersions: only ops that carry version 2's fields (a command, a
// credential's hash) need every voter at version 2 (decision 0012).
func TestOpVersions(t *testing.T) {
	for _, c := range []struct {
		op   meta.Op
		want int
	}{
		{AddOp(Session{ID: "a"}), 1},
		{AddOp(Session{ID: "a", CredentialHash: "h"}), 2},
		{AddOp(Session{ID: "a", Command: []string{"x"}}), 2},
		{SetOp(Move{ID: "a"}), 1},
		{SetOp(Move{ID: "a", CredentialHash: "h"}), 2},
		{DeleteOp("a"), 1},
	} {
		if c.op.V != c.want || c.op.V > Version {
			t.Errorf("%s %s: version %d, want %d", c.op.Kind, c.op.Body, c.op.V, c.want)
		}
	}
}
