package auth_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/meta"
)

// world is a state machine holding the auth part, fed ops as raft log
// entries, keeping every entry it applied.
type world struct {
	t   testing.TB
	fsm *meta.FSM
	idx uint64
	log [][]byte
}

func newWorld(t testing.TB) *world {
	return &world{t: t, fsm: meta.NewFSM(auth.NewPart())}
}

// apply commits op and returns its refusal (nil when applied).
func (w *world) apply(op meta.Op) error {
	w.t.Helper()
	b, err := op.Encode()
	if err != nil {
		w.t.Fatal(err)
	}
	w.idx++
	w.log = append(w.log, b)
	r := w.fsm.Apply(&raft.Log{Index: w.idx, Term: 1, Type: raft.LogCommand, Data: b}).(*meta.Result)
	return r.Err
}

func (w *world) must(op meta.Op) {
	w.t.Helper()
	if err := w.apply(op); err != nil {
		w.t.Fatalf("%s: %v", op.Kind, err)
	}
}

func (w *world) snapshot() []byte {
	w.t.Helper()
	snap, err := w.fsm.Snapshot()
	if err != nil {
		w.t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		w.t.Fatal(err)
	}
	return sink.Bytes()
}

// section is the auth part's snapshot section alone.
func (w *world) section() (b []byte) {
	w.t.Helper()
	w.fsm.ReadPart(auth.NS, func(p meta.Part) {
		var err error
		if b, err = p.Snapshot(); err != nil {
			w.t.Fatal(err)
		}
	})
	return b
}

func (w *world) restored() *meta.FSM {
	w.t.Helper()
	m := meta.NewFSM(auth.NewPart())
	if err := m.Restore(io.NopCloser(bytes.NewReader(w.snapshot()))); err != nil {
		w.t.Fatal(err)
	}
	return m
}

type memSink struct{ bytes.Buffer }

func (s *memSink) ID() string    { return "test" }
func (s *memSink) Close() error  { return nil }
func (s *memSink) Cancel() error { return nil }

var testKey = bytes.Repeat([]byte{7}, 32)

func sealer(t testing.TB) *auth.Sealer {
	s, err := auth.NewSealer(testKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hash(t testing.TB, pw string) string {
	h, err := auth.HashPassword(pw, auth.TestHashParams())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// people fills w with: root (admin, password), alice (rw docs/, ro pub/,
// a token, an access key), bob (no grants); it returns the secrets.
type secrets struct {
	rootPW, alicePW, aliceToken, keyID, keySecret string
}

func people(t testing.TB, w *world) secrets {
	s := secrets{rootPW: "root-pass-123", alicePW: "alice-pass-456", aliceToken: auth.NewToken()}
	s.keyID, s.keySecret = auth.NewAccessKey()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w.must(auth.AddUserOp(auth.User{Name: "root", PasswordHash: hash(t, s.rootPW), Admin: true, Created: now}))
	w.must(auth.AddUserOp(auth.User{Name: "alice", PasswordHash: hash(t, s.alicePW), Created: now,
		Grants: []auth.Grant{{Prefix: "docs/", Write: true}, {Prefix: "pub/"}}}))
	w.must(auth.AddUserOp(auth.User{Name: "bob", Created: now}))
	w.must(auth.AddTokenOp(auth.Token{Name: "laptop", User: "alice", Hash: auth.TokenHash(s.aliceToken), Created: now}))
	w.must(auth.AddKeyOp(auth.AccessKey{ID: s.keyID, User: "alice", Sealed: sealer(t).Seal(s.keyID, s.keySecret), Created: now}))
	return s
}
