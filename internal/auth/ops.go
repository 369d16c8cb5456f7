package auth

import (
	"encoding/json"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// NS is the security model's namespace in the replicated state; Version
// the highest op version this binary applies.
const (
	NS      = "auth"
	Version = 1
)

// Op kinds of the auth namespace (version 1).
const (
	OpUserAdd     = "user_add"
	OpUserSet     = "user_set"
	OpUserDelete  = "user_delete"
	OpTokenAdd    = "token_add"
	OpTokenRevoke = "token_revoke"
	OpKeyAdd      = "key_add"
	OpKeyDelete   = "key_delete"
)

// UserSet changes a user: each field set replaces the user's.
type UserSet struct {
	Name         string   `json:"name"`
	PasswordHash *string  `json:"password_hash,omitempty"`
	Admin        *bool    `json:"admin,omitempty"`
	Grants       *[]Grant `json:"grants,omitempty"`
}

// ref names a record: a user, a user's token, or a key.
type ref struct {
	User string `json:"user,omitempty"`
	Name string `json:"name,omitempty"`
	ID   string `json:"id,omitempty"`
}

func op(kind string, body any) meta.Op {
	b, _ := json.Marshal(body) // the bodies are plain structs: Marshal does not fail
	return meta.Op{NS: NS, V: Version, Kind: kind, Body: b}
}

// AddUserOp adds u (its password already hashed); it fails if the name is
// taken.
func AddUserOp(u User) meta.Op { return op(OpUserAdd, u) }

// SetUserOp changes a user.
func SetUserOp(s UserSet) meta.Op { return op(OpUserSet, s) }

// DeleteUserOp deletes a user with its tokens and keys.
func DeleteUserOp(name string) meta.Op { return op(OpUserDelete, ref{User: name}) }

// AddTokenOp records a token (by its hash).
func AddTokenOp(t Token) meta.Op { return op(OpTokenAdd, t) }

// RevokeTokenOp deletes a user's token by name.
func RevokeTokenOp(user, name string) meta.Op {
	return op(OpTokenRevoke, ref{User: user, Name: name})
}

// AddKeyOp records an access key (its secret sealed).
func AddKeyOp(k AccessKey) meta.Op { return op(OpKeyAdd, k) }

// DeleteKeyOp deletes an access key.
func DeleteKeyOp(id string) meta.Op { return op(OpKeyDelete, ref{ID: id}) }

// Now is the time stamped on new records: the proposer's clock, rounded so
// that records read the same everywhere.
func Now() time.Time { return time.Now().UTC().Truncate(time.Second) }
