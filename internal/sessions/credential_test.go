package sessions

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/mure-dev/mure/internal/meta"
)

func TestCredentials(t *testing.T) {
	fsm := meta.NewFSM(NewPart())
	idx := uint64(0)
	tok, hash := NewCredential("0123456789abcdef")
	other, _ := NewCredential("0123456789abcdef")
	if tok == other || strings.Contains(hash, tok[len(CredentialPrefix)+17:]) {
		t.Fatal("credentials repeat, or the hash holds the secret")
	}
	apply := func(op meta.Op) {
		t.Helper()
		b, err := op.Encode()
		if err != nil {
			t.Fatal(err)
		}
		idx++
		if res := fsm.Apply(&raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: b}).(*meta.Result); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	apply(AddOp(Session{ID: "0123456789abcdef", User: "alice", Kind: "shell", Node: "n1", State: StateRunning, Created: time.Now(), CredentialHash: hash}))
	c := Credentials{FSM: fsm}
	for _, tc := range []struct {
		name, token string
		ok          bool
	}{
		{"its own", tok, true},
		{"another secret for the same session", other, false},
		{"a user's token", "mure_" + strings.Repeat("A", 43), false},
		{"short", CredentialPrefix + "0123456789abcdef_abc", false},
		{"another session's id", strings.Replace(tok, "0123456789abcdef", "fedcba9876543210", 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, id, err := c.Check(tc.token)
			if tc.ok != (err == nil) || tc.ok && (user != "alice" || id != "0123456789abcdef") {
				t.Fatalf("check: %q %q %v, want ok=%v", user, id, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrBadCredential) {
				t.Fatalf("err %v, want ErrBadCredential", err)
			}
		})
	}
	if !c.IsCredential(tok) || c.IsCredential("mure_x") {
		t.Fatal("IsCredential does not tell the forms apart")
	}
	// The session ends: its credential is good for nothing.
	apply(DeleteOp("0123456789abcdef"))
	if _, _, err := c.Check(tok); !errors.Is(err, ErrBadCredential) {
		t.Fatalf("after the session ended: %v, want ErrBadCredential", err)
	}
}
