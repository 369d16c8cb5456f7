package client

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// WithBasicAuth authenticates every request with a user's password, or an
// access key ID and its secret (HTTP Basic). Nodes accept it over TLS or
// from loopback only.
func WithBasicAuth(user, password string) Option {
	return func(c *Client) { c.user, c.password = user, password }
}

// WithCA trusts the certificates of pool (a cluster CA: mure ca init) for
// nodes given as https://HOST:PORT, instead of the system's roots.
func WithCA(pool *x509.CertPool) Option { return func(c *Client) { c.roots = pool } }

// Principal is who the node takes the client for (GET /auth/whoami).
type Principal struct {
	User       string   `json:"user"`
	Via        string   `json:"via"`
	Credential string   `json:"credential,omitempty"`
	Admin      bool     `json:"admin,omitempty"`
	Grants     []string `json:"grants,omitempty"`
}

// User is a user as the API shows it (never its password's hash).
type User struct {
	Name        string    `json:"name"`
	Admin       bool      `json:"admin,omitempty"`
	Grants      []string  `json:"grants,omitempty"`
	HasPassword bool      `json:"has_password"`
	Created     time.Time `json:"created"`
}

// UserChange is a new user or a change to one: nil fields are left as
// they are. Grants are "rw:PREFIX" or "ro:PREFIX".
type UserChange struct {
	Name     string    `json:"name,omitempty"`
	Password *string   `json:"password,omitempty"`
	Admin    *bool     `json:"admin,omitempty"`
	Grants   *[]string `json:"grants,omitempty"`
}

// Token is a bearer token's record; Token (the secret) is set only in
// the answer of CreateToken.
type Token struct {
	Name    string    `json:"name"`
	User    string    `json:"user"`
	Token   string    `json:"token,omitempty"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires,omitzero"`
}

// AccessKey is an access key's record; Secret is set only in the answer of
// CreateAccessKey.
type AccessKey struct {
	ID      string    `json:"id"`
	User    string    `json:"user"`
	Secret  string    `json:"secret,omitempty"`
	Created time.Time `json:"created"`
}

// sendJSON makes a request with a JSON body (never retried once sent:
// creating a credential twice would make two) and decodes the answer.
func (c *Client) sendJSON(ctx context.Context, method, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	cl := &call{method: method, path: path, policy: once, size: int64(len(b)),
		header: http.Header{"Content-Type": {"application/json"}}, body: newBody(bytes.NewReader(b))}
	resp, err := c.do(ctx, cl)
	if err != nil {
		return err
	}
	if out == nil {
		drain(resp)
		return nil
	}
	return decodeJSON(resp, out)
}

// WhoAmI returns who the node takes this client for.
func (c *Client) WhoAmI(ctx context.Context) (Principal, error) {
	var p Principal
	return p, c.getJSON(ctx, "/auth/whoami", nil, &p)
}

// Users lists the users (admin only).
func (c *Client) Users(ctx context.Context) ([]User, error) {
	var us []User
	return us, c.getJSON(ctx, "/auth/users", nil, &us)
}

// AddUser creates a user (admin only).
func (c *Client) AddUser(ctx context.Context, u UserChange) (User, error) {
	var out User
	return out, c.sendJSON(ctx, http.MethodPost, "/auth/users", u, &out)
}

// SetUser changes a user: an admin anything, a user its own password.
func (c *Client) SetUser(ctx context.Context, name string, u UserChange) (User, error) {
	var out User
	return out, c.sendJSON(ctx, http.MethodPatch, "/auth/users/"+url.PathEscape(name), u, &out)
}

// DeleteUser deletes a user with its tokens and keys (admin only).
func (c *Client) DeleteUser(ctx context.Context, name string) error {
	return c.simple(ctx, &call{method: http.MethodDelete, path: "/auth/users/" + url.PathEscape(name), policy: once})
}

// CreateToken makes a bearer token named name for user ("": the caller),
// expiring after ttl (0: never). The answer's Token is the only copy.
func (c *Client) CreateToken(ctx context.Context, user, name string, ttl time.Duration) (Token, error) {
	req := map[string]string{"name": name, "user": user}
	if ttl > 0 {
		req["ttl"] = ttl.String()
	}
	var out Token
	return out, c.sendJSON(ctx, http.MethodPost, "/auth/tokens", req, &out)
}

// Tokens lists a user's tokens ("": the caller's, or everyone's for an
// admin).
func (c *Client) Tokens(ctx context.Context, user string) ([]Token, error) {
	var q url.Values
	if user != "" {
		q = url.Values{"user": {user}}
	}
	var ts []Token
	return ts, c.getJSON(ctx, "/auth/tokens", q, &ts)
}

// RevokeToken deletes a user's token.
func (c *Client) RevokeToken(ctx context.Context, user, name string) error {
	return c.simple(ctx, &call{method: http.MethodDelete, path: "/auth/tokens/" + url.PathEscape(user) + "/" + url.PathEscape(name), policy: once})
}

// CreateAccessKey makes an access key for user ("": the caller). The
// answer's Secret is the only copy.
func (c *Client) CreateAccessKey(ctx context.Context, user string) (AccessKey, error) {
	var out AccessKey
	return out, c.sendJSON(ctx, http.MethodPost, "/auth/keys", map[string]string{"user": user}, &out)
}

// AccessKeys lists access keys, as Tokens does.
func (c *Client) AccessKeys(ctx context.Context, user string) ([]AccessKey, error) {
	var q url.Values
	if user != "" {
		q = url.Values{"user": {user}}
	}
	var ks []AccessKey
	return ks, c.getJSON(ctx, "/auth/keys", q, &ks)
}

// DeleteAccessKey deletes an access key.
func (c *Client) DeleteAccessKey(ctx context.Context, id string) error {
	return c.simple(ctx, &call{method: http.MethodDelete, path: "/auth/keys/" + url.PathEscape(id), policy: once})
}
