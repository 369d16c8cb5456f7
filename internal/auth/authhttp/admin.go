package authhttp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/meta"
)

// Admin serves the /auth/ endpoints: users (admin only), tokens and
// access keys (an admin's for anyone, a user's own), and whoami. Secrets
// are hashed or sealed on this node before the entry is proposed, so the
// raft log never holds them in clear; new tokens and key secrets are in
// the answer once and nowhere else.
type Admin struct {
	// Apply commits an op of the auth namespace (cluster.ApplyOp).
	Apply func(ctx context.Context, op meta.Op) (*meta.Result, error)
	// Records is the replicated state (meta.FSM).
	Records auth.Records
	// Sealer seals access key secrets.
	Sealer *auth.Sealer
	// Params hash new passwords (zero: auth.DefaultHashParams).
	Params auth.HashParams
	// Open says the node runs with --auth=false: requests carry no
	// principal, and a new access key is refused with why none is needed
	// (S3 accepts any key then: decision 0060).
	Open bool
}

// Routes mounts the endpoints on mux (behind a Guard, which puts the
// principal in the request's context).
func (a *Admin) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /auth/whoami", a.whoami)
	mux.HandleFunc("GET /auth/users", a.listUsers)
	mux.HandleFunc("POST /auth/users", a.addUser)
	mux.HandleFunc("PATCH /auth/users/{name}", a.setUser)
	mux.HandleFunc("DELETE /auth/users/{name}", a.deleteUser)
	mux.HandleFunc("GET /auth/tokens", a.listTokens)
	mux.HandleFunc("POST /auth/tokens", a.addToken)
	mux.HandleFunc("DELETE /auth/tokens/{user}/{name}", a.revokeToken)
	mux.HandleFunc("GET /auth/keys", a.listKeys)
	mux.HandleFunc("POST /auth/keys", a.addKey)
	mux.HandleFunc("DELETE /auth/keys/{id}", a.deleteKey)
}

// caller returns the request's principal and whether it may act for user
// (itself, or anyone when admin); it answers 403 when not.
func caller(w http.ResponseWriter, r *http.Request, user string) (auth.Principal, bool) {
	p, _ := PrincipalFrom(r.Context())
	if p.Admin || user == "" || user == p.User && p.User != "" {
		return p, true
	}
	api.Error(w, http.StatusForbidden, api.CodeForbidden, p.Name()+" may not manage "+user+"'s credentials: it needs an admin")
	return p, false
}

// listed returns whose records a listing shows: those of ?user= (the
// caller's own, or anyone's for an admin), else the caller's own, or
// everyone's for an admin; it answers 403 when the caller may not.
func listed(w http.ResponseWriter, r *http.Request) (string, bool) {
	user := r.URL.Query().Get("user")
	p, ok := caller(w, r, user)
	if ok && user == "" && !p.Admin {
		user = p.User
	}
	return user, ok
}

func adminOnly(w http.ResponseWriter, r *http.Request) bool {
	p, _ := PrincipalFrom(r.Context())
	if !p.Admin {
		api.Error(w, http.StatusForbidden, api.CodeForbidden, p.Name()+" may not "+r.Method+" "+r.URL.Path+": it needs an admin")
	}
	return p.Admin
}

func (a *Admin) part(fn func(p *auth.Part)) {
	a.Records.ReadPart(auth.NS, func(mp meta.Part) { fn(mp.(*auth.Part)) })
}

// commit proposes op and answers the error, if any, as JSON.
func (a *Admin) commit(w http.ResponseWriter, r *http.Request, op meta.Op) bool {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	res, err := a.Apply(ctx, op)
	if err != nil {
		if errors.Is(err, meta.ErrUnsupported) {
			api.Error(w, http.StatusConflict, api.CodeConflict, err.Error())
			return false
		}
		api.Unavailable(w, 1, api.CodeNoQuorum, "cannot change users and credentials now: "+err.Error())
		return false
	}
	switch {
	case res.Err == nil:
		return true
	case errors.Is(res.Err, meta.ErrNotFound):
		api.Error(w, http.StatusNotFound, api.CodeNotFound, res.Err.Error())
	case errors.Is(res.Err, meta.ErrPrecondition):
		api.Error(w, http.StatusConflict, api.CodeConflict, res.Err.Error())
	default:
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, res.Err.Error())
	}
	return false
}

// readJSON decodes a small request body into v, or answers 400.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "the body is not the JSON expected (see docs/api.md): "+err.Error())
		return false
	}
	return true
}

func (a *Admin) whoami(w http.ResponseWriter, r *http.Request) {
	p, _ := PrincipalFrom(r.Context())
	api.JSON(w, http.StatusOK, principalView(p))
}

// PrincipalView is whoami's answer.
type PrincipalView struct {
	User       string   `json:"user"`
	Via        string   `json:"via"`
	Credential string   `json:"credential,omitempty"`
	Admin      bool     `json:"admin,omitempty"`
	Grants     []string `json:"grants,omitempty"`
}

func principalView(p auth.Principal) PrincipalView {
	return PrincipalView{User: p.Name(), Via: p.Via, Credential: p.Credential, Admin: p.Admin, Grants: grantStrings(p.Grants)}
}

func grantStrings(gs []auth.Grant) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.String())
	}
	return out
}

func parseGrants(w http.ResponseWriter, ss []string) ([]auth.Grant, bool) {
	gs := []auth.Grant{}
	for _, s := range ss {
		g, err := auth.ParseGrant(s)
		if err != nil {
			api.Error(w, http.StatusBadRequest, api.CodeBadRequest, err.Error())
			return nil, false
		}
		gs = append(gs, g)
	}
	return gs, true
}
