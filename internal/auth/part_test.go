package auth_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/meta"
)

func TestPartRefusals(t *testing.T) {
	w := newWorld(t)
	people(t, w)
	tok := auth.TokenHash(auth.NewToken())
	id, _ := auth.NewAccessKey()
	admin := true
	bad := []auth.Grant{{Prefix: "/abs"}}
	tests := []struct {
		name string
		op   meta.Op
		want error
	}{
		{"user exists", auth.AddUserOp(auth.User{Name: "alice"}), auth.ErrExists},
		{"bad user name", auth.AddUserOp(auth.User{Name: "Alice Smith"}), auth.ErrInvalid},
		{"bad hash", auth.AddUserOp(auth.User{Name: "carol", PasswordHash: "plain"}), auth.ErrMalformed},
		{"bad grant", auth.AddUserOp(auth.User{Name: "carol", Grants: bad}), auth.ErrInvalid},
		{"set unknown user", auth.SetUserOp(auth.UserSet{Name: "nobody", Admin: &admin}), auth.ErrNotFound},
		{"delete unknown user", auth.DeleteUserOp("nobody"), auth.ErrNotFound},
		{"token of unknown user", auth.AddTokenOp(auth.Token{Name: "t", User: "nobody", Hash: tok}), auth.ErrNotFound},
		{"token name taken", auth.AddTokenOp(auth.Token{Name: "laptop", User: "alice", Hash: tok}), auth.ErrExists},
		{"token not hashed", auth.AddTokenOp(auth.Token{Name: "t2", User: "alice", Hash: auth.NewToken()}), auth.ErrInvalid},
		{"revoke unknown token", auth.RevokeTokenOp("alice", "phone"), auth.ErrNotFound},
		{"key of unknown user", auth.AddKeyOp(auth.AccessKey{ID: id, User: "nobody", Sealed: "x"}), auth.ErrNotFound},
		{"key without secret", auth.AddKeyOp(auth.AccessKey{ID: id, User: "bob"}), auth.ErrInvalid},
		{"bad key id", auth.AddKeyOp(auth.AccessKey{ID: "AKIA", User: "bob", Sealed: "x"}), auth.ErrMalformed},
		{"delete unknown key", auth.DeleteKeyOp(id), auth.ErrNotFound},
		{"unknown op", meta.Op{NS: auth.NS, V: 1, Kind: "nope"}, meta.ErrBadCommand},
		{"bad body", meta.Op{NS: auth.NS, V: 1, Kind: auth.OpUserAdd, Body: []byte(`[1]`)}, meta.ErrBadCommand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := w.section()
			if err := w.apply(tc.op); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if !bytes.Equal(before, w.section()) {
				t.Fatal("a refused op changed the state")
			}
		})
	}
}

// Deleting a user takes its tokens and keys with it; the snapshot carries
// every record to a restored state machine.
func TestPartDeleteAndRestore(t *testing.T) {
	w := newWorld(t)
	s := people(t, w)
	grants := []auth.Grant{{Prefix: "", Write: false}}
	w.must(auth.SetUserOp(auth.UserSet{Name: "bob", Grants: &grants}))

	m := w.restored()
	m.ReadPart(auth.NS, func(p meta.Part) {
		ap := p.(*auth.Part)
		if u := ap.User("bob"); u == nil || len(u.Grants) != 1 {
			t.Errorf("restored bob = %+v", u)
		}
		if tk := ap.TokenByHash(auth.TokenHash(s.aliceToken)); tk == nil || tk.Name != "laptop" {
			t.Errorf("restored token = %+v", tk)
		}
		if k := ap.Key(s.keyID); k == nil || k.User != "alice" {
			t.Errorf("restored key = %+v", k)
		}
	})

	w.must(auth.DeleteUserOp("alice"))
	w.fsm.ReadPart(auth.NS, func(p meta.Part) {
		ap := p.(*auth.Part)
		if len(ap.Tokens("")) != 0 || len(ap.Keys("")) != 0 || ap.User("alice") != nil {
			t.Errorf("alice's records outlived her: %v %v", ap.Tokens(""), ap.Keys(""))
		}
	})
}

// No secret appears in clear in the raft log or the snapshot: passwords
// and tokens are stored hashed, access key secrets sealed.
func TestNoSecretInClear(t *testing.T) {
	w := newWorld(t)
	s := people(t, w)
	newPW := "changed-pass-789"
	h := hash(t, newPW)
	w.must(auth.SetUserOp(auth.UserSet{Name: "root", PasswordHash: &h}))
	w.must(auth.AddTokenOp(auth.Token{Name: "short", User: "root", Hash: auth.TokenHash(auth.NewToken()), Expires: time.Now().Add(time.Hour)}))

	all := append(bytes.Join(w.log, nil), w.snapshot()...)
	for name, secret := range map[string]string{"root's password": s.rootPW, "alice's password": s.alicePW,
		"new password": newPW, "token": s.aliceToken, "access key secret": s.keySecret} {
		if bytes.Contains(all, []byte(secret)) {
			t.Errorf("%s appears in clear in the log or the snapshot", name)
		}
	}
	if !bytes.Contains(all, []byte(s.keyID)) {
		t.Error("the access key ID (public) should be in the records; the test looks in the wrong place")
	}
}

// An add applied again, equal to the record it made (a forwarded
// proposal whose answer was lost is proposed again), succeeds and changes
// nothing; an add of another record under a name or ID taken is refused.
func TestPartAddRetried(t *testing.T) {
	w := newWorld(t)
	s := people(t, w)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var key auth.AccessKey // as people added them (hashing and sealing are randomised)
	var alice meta.Op
	w.fsm.ReadPart(auth.NS, func(p meta.Part) {
		key = *p.(*auth.Part).Key(s.keyID)
		alice = auth.AddUserOp(*p.(*auth.Part).User("alice"))
	})
	tok := auth.Token{Name: "laptop", User: "alice", Hash: auth.TokenHash(s.aliceToken), Created: now}
	for _, tc := range []struct {
		name string
		op   meta.Op
		want error
	}{
		{"user again", alice, nil},
		{"another user alice", auth.AddUserOp(auth.User{Name: "alice", PasswordHash: hash(t, "other-pass-789"), Created: now}), auth.ErrExists},
		// Without a password, an add equal to bob's may be a second one
		// made in the same second (the API's times are in seconds).
		{"user without a password", auth.AddUserOp(auth.User{Name: "bob", Created: now}), auth.ErrExists},
		{"token again", auth.AddTokenOp(tok), nil},
		{"another token laptop", auth.AddTokenOp(auth.Token{Name: "laptop", User: "alice", Hash: auth.TokenHash(auth.NewToken()), Created: now}), auth.ErrExists},
		{"key again", auth.AddKeyOp(key), nil},
		{"another key of that ID", auth.AddKeyOp(auth.AccessKey{ID: s.keyID, User: "bob", Sealed: key.Sealed, Created: now}), auth.ErrExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := w.section()
			if err := w.apply(tc.op); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if !bytes.Equal(before, w.section()) {
				t.Fatal("the op changed the state")
			}
		})
	}
}
