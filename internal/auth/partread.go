package auth

import (
	"cmp"
	"encoding/json"
	"slices"
)

// User returns a copy of a user (nil if none).
func (p *Part) User(name string) *User {
	if u, ok := p.users[name]; ok {
		return u.clone()
	}
	return nil
}

// TokenByHash returns a copy of the token with that hash (nil if none).
func (p *Part) TokenByHash(hash string) *Token {
	if t, ok := p.tokens[hash]; ok {
		c := *t
		return &c
	}
	return nil
}

// Key returns a copy of an access key (nil if none).
func (p *Part) Key(id string) *AccessKey {
	if k, ok := p.keys[id]; ok {
		c := *k
		return &c
	}
	return nil
}

// Users returns copies of every user, by name.
func (p *Part) Users() []User {
	var out []User
	for _, u := range p.users {
		out = append(out, *u.clone())
	}
	slices.SortFunc(out, func(a, b User) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Tokens returns copies of a user's tokens ("" for everyone's), by user
// and name.
func (p *Part) Tokens(user string) []Token {
	var out []Token
	for _, t := range p.tokens {
		if user == "" || t.User == user {
			out = append(out, *t)
		}
	}
	slices.SortFunc(out, func(a, b Token) int { return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Name, b.Name)) })
	return out
}

// Keys returns copies of a user's access keys ("" for everyone's), by ID.
func (p *Part) Keys(user string) []AccessKey {
	var out []AccessKey
	for _, k := range p.keys {
		if user == "" || k.User == user {
			out = append(out, *k)
		}
	}
	slices.SortFunc(out, func(a, b AccessKey) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// section is the part's snapshot section: every record, in a stable order.
type section struct {
	Users  []User      `json:"users,omitempty"`
	Tokens []Token     `json:"tokens,omitempty"`
	Keys   []AccessKey `json:"keys,omitempty"`
}

// Snapshot implements meta.Part. It holds hashes and sealed secrets only.
func (p *Part) Snapshot() ([]byte, error) {
	if len(p.users) == 0 {
		return nil, nil
	}
	return json.Marshal(section{Users: p.Users(), Tokens: p.Tokens(""), Keys: p.Keys("")})
}

// Restore implements meta.Part.
func (p *Part) Restore(b []byte) error {
	fresh := NewPart()
	if b != nil {
		var s section
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		for i := range s.Users {
			fresh.users[s.Users[i].Name] = &s.Users[i]
		}
		for i := range s.Tokens {
			fresh.tokens[s.Tokens[i].Hash] = &s.Tokens[i]
		}
		for i := range s.Keys {
			fresh.keys[s.Keys[i].ID] = &s.Keys[i]
		}
	}
	*p = *fresh
	return nil
}
