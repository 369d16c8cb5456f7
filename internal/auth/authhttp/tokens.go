package authhttp

import (
	"net/http"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/auth"
)

// TokenRequest is the body of POST /auth/tokens.
type TokenRequest struct {
	Name string `json:"name"`
	// User owns the token (default: the caller; another user: admin only).
	User string `json:"user,omitempty"`
	// TTL is how long the token works ("24h"; "": never expires).
	TTL string `json:"ttl,omitempty"`
}

// TokenView is a token as the API shows it; Token (the secret) only in
// the answer that made it.
type TokenView struct {
	Name    string    `json:"name"`
	User    string    `json:"user"`
	Token   string    `json:"token,omitempty"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires,omitzero"`
}

func tokenView(t auth.Token) TokenView {
	return TokenView{Name: t.Name, User: t.User, Created: t.Created, Expires: t.Expires}
}

func (a *Admin) addToken(w http.ResponseWriter, r *http.Request) {
	var req TokenRequest
	if !readJSON(w, r, &req) {
		return
	}
	p, ok := caller(w, r, req.User)
	if !ok {
		return
	}
	if req.User == "" {
		if p.Via == auth.ViaStaticToken {
			api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "the static --token is no user: name the user (\"user\") to make a token for")
			return
		}
		req.User = p.User
	}
	if err := auth.ValidName("token", req.Name); err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, err.Error())
		return
	}
	t := auth.Token{Name: req.Name, User: req.User, Created: auth.Now()}
	if req.TTL != "" {
		ttl, err := time.ParseDuration(req.TTL)
		if err != nil || ttl <= 0 {
			api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "ttl is a positive duration such as 24h or 30m")
			return
		}
		t.Expires = time.Now().Add(ttl).UTC().Truncate(time.Second)
	}
	secret := auth.NewToken()
	t.Hash = auth.TokenHash(secret)
	if a.commit(w, r, auth.AddTokenOp(t)) {
		v := tokenView(t)
		v.Token = secret
		api.JSON(w, http.StatusCreated, v)
	}
}

func (a *Admin) listTokens(w http.ResponseWriter, r *http.Request) {
	user, ok := listed(w, r)
	if !ok {
		return
	}
	out := []TokenView{}
	a.part(func(ap *auth.Part) {
		for _, t := range ap.Tokens(user) {
			out = append(out, tokenView(t))
		}
	})
	api.JSON(w, http.StatusOK, out)
}

func (a *Admin) revokeToken(w http.ResponseWriter, r *http.Request) {
	user, name := r.PathValue("user"), r.PathValue("name")
	if _, ok := caller(w, r, user); !ok {
		return
	}
	if a.commit(w, r, auth.RevokeTokenOp(user, name)) {
		api.JSON(w, http.StatusOK, map[string]string{"revoked": name, "user": user})
	}
}
