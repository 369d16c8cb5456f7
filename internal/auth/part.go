package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/mure-dev/mure/internal/meta"
)

// Part is the auth namespace's records in the replicated state: users,
// tokens (by hash) and access keys. Like every meta.Part it is
// deterministic and used under the FSM's lock (FSM.ReadPart to read).
type Part struct {
	users  map[string]*User
	tokens map[string]*Token // by hash
	keys   map[string]*AccessKey
}

// NewPart returns an empty auth part.
func NewPart() *Part {
	return &Part{users: map[string]*User{}, tokens: map[string]*Token{}, keys: map[string]*AccessKey{}}
}

// Namespace implements meta.Part.
func (p *Part) Namespace() string { return NS }

// Version implements meta.Part.
func (p *Part) Version() int { return Version }

// Apply implements meta.Part.
func (p *Part) Apply(_ uint64, o meta.Op) *meta.Result {
	if err := p.apply(o); err != nil {
		return &meta.Result{Err: fmt.Errorf("%s: %w", o.Kind, wireKind(err))}
	}
	return &meta.Result{}
}

// wireKind adds to err the meta sentinel that carries its kind to a
// proposer on another node (meta.Result.Wire keeps meta's kinds only).
func wireKind(err error) error {
	var kind error
	switch {
	case errors.Is(err, ErrNotFound):
		kind = meta.ErrNotFound
	case errors.Is(err, ErrExists):
		kind = meta.ErrPrecondition
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrMalformed):
		kind = meta.ErrBadCommand
	default:
		return err
	}
	return fmt.Errorf("%w%w", err, &quiet{kind})
}

// quiet wraps a sentinel without adding its text.
type quiet struct{ err error }

func (q *quiet) Error() string { return "" }
func (q *quiet) Unwrap() error { return q.err }

func decode[T any](o meta.Op) (T, error) {
	var v T
	if err := json.Unmarshal(o.Body, &v); err != nil {
		return v, fmt.Errorf("%w: %v", meta.ErrBadCommand, err)
	}
	return v, nil
}

func (p *Part) apply(o meta.Op) error {
	switch o.Kind {
	case OpUserAdd:
		u, err := decode[User](o)
		if err != nil {
			return err
		}
		return p.addUser(&u)
	case OpUserSet:
		s, err := decode[UserSet](o)
		if err != nil {
			return err
		}
		return p.setUser(s)
	case OpUserDelete:
		r, err := decode[ref](o)
		if err != nil {
			return err
		}
		return p.deleteUser(r.User)
	case OpTokenAdd:
		t, err := decode[Token](o)
		if err != nil {
			return err
		}
		return p.addToken(&t)
	case OpTokenRevoke:
		r, err := decode[ref](o)
		if err != nil {
			return err
		}
		return p.revokeToken(r.User, r.Name)
	case OpKeyAdd:
		k, err := decode[AccessKey](o)
		if err != nil {
			return err
		}
		return p.addKey(&k)
	case OpKeyDelete:
		r, err := decode[ref](o)
		if err != nil {
			return err
		}
		if _, ok := p.keys[r.ID]; !ok {
			return fmt.Errorf("%w: access key %s", ErrNotFound, r.ID)
		}
		delete(p.keys, r.ID)
		return nil
	}
	return fmt.Errorf("%w: auth has no op %q", meta.ErrBadCommand, o.Kind)
}

// An add equal to the record present, to its creation time and its
// hashed or sealed secret (random, so unique to one op), is the same op applied again (a forwarded
// proposal whose answer was lost is proposed again: cluster's propose),
// not a second record: it succeeds and changes nothing, instead of
// refusing what the first attempt did.
func retried[T any](old, add *T) bool { return reflect.DeepEqual(*old, *add) }

func (p *Part) addUser(u *User) error {
	if err := u.validate(); err != nil {
		return err
	}
	if old, ok := p.users[u.Name]; ok {
		// Without a password nothing tells a retry from a second add made
		// in the same second: only a salted hash is unique.
		if u.PasswordHash != "" && retried(old, u) {
			return nil
		}
		return fmt.Errorf("%w: user %s", ErrExists, u.Name)
	}
	p.users[u.Name] = u
	return nil
}

func (p *Part) setUser(s UserSet) error {
	old, ok := p.users[s.Name]
	if !ok {
		return fmt.Errorf("%w: user %s", ErrNotFound, s.Name)
	}
	u := old.clone()
	if s.PasswordHash != nil {
		u.PasswordHash = *s.PasswordHash
	}
	if s.Admin != nil {
		u.Admin = *s.Admin
	}
	if s.Grants != nil {
		u.Grants = slices.Clone(*s.Grants)
	}
	if err := u.validate(); err != nil {
		return err
	}
	p.users[s.Name] = u
	return nil
}

func (p *Part) deleteUser(name string) error {
	if _, ok := p.users[name]; !ok {
		return fmt.Errorf("%w: user %s", ErrNotFound, name)
	}
	delete(p.users, name)
	maps.DeleteFunc(p.tokens, func(_ string, t *Token) bool { return t.User == name })
	maps.DeleteFunc(p.keys, func(_ string, k *AccessKey) bool { return k.User == name })
	return nil
}

func (p *Part) addToken(t *Token) error {
	if err := ValidName("token", t.Name); err != nil {
		return err
	}
	if _, ok := p.users[t.User]; !ok {
		return fmt.Errorf("%w: user %s", ErrNotFound, t.User)
	}
	if len(t.Hash) != 64 {
		return fmt.Errorf("%w: a token is stored as its SHA-256 in hex", ErrInvalid)
	}
	if old := p.token(t.User, t.Name); old != nil {
		if retried(old, t) {
			return nil
		}
		return fmt.Errorf("%w: token %s of %s", ErrExists, t.Name, t.User)
	}
	if _, ok := p.tokens[t.Hash]; ok {
		return fmt.Errorf("%w: token hash", ErrExists)
	}
	p.tokens[t.Hash] = t
	return nil
}

func (p *Part) revokeToken(user, name string) error {
	t := p.token(user, name)
	if t == nil {
		return fmt.Errorf("%w: token %s of %s", ErrNotFound, name, user)
	}
	delete(p.tokens, t.Hash)
	return nil
}

func (p *Part) addKey(k *AccessKey) error {
	if _, err := ParseKeyID(k.ID); err != nil {
		return err
	}
	if _, ok := p.users[k.User]; !ok {
		return fmt.Errorf("%w: user %s", ErrNotFound, k.User)
	}
	if k.Sealed == "" {
		return fmt.Errorf("%w: an access key needs its sealed secret", ErrInvalid)
	}
	if old, ok := p.keys[k.ID]; ok {
		if retried(old, k) {
			return nil
		}
		return fmt.Errorf("%w: access key %s", ErrExists, k.ID)
	}
	p.keys[k.ID] = k
	return nil
}

// token finds a user's token by name (a linear scan: tokens are few and
// this is for the admin ops, not for authentication).
func (p *Part) token(user, name string) *Token {
	for _, t := range p.tokens {
		if t.User == user && t.Name == name {
			return t
		}
	}
	return nil
}
