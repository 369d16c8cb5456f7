package authhttp

import (
	"net/http"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/auth"
)

// UserView is a user as the API shows it: never the password's hash.
type UserView struct {
	Name        string    `json:"name"`
	Admin       bool      `json:"admin,omitempty"`
	Grants      []string  `json:"grants,omitempty"`
	HasPassword bool      `json:"has_password"`
	Created     time.Time `json:"created"`
}

func userView(u auth.User) UserView {
	return UserView{Name: u.Name, Admin: u.Admin, Grants: grantStrings(u.Grants), HasPassword: u.PasswordHash != "", Created: u.Created}
}

// UserRequest is the body of POST /auth/users and PATCH /auth/users/NAME.
type UserRequest struct {
	Name     string    `json:"name,omitempty"`
	Password *string   `json:"password,omitempty"`
	Admin    *bool     `json:"admin,omitempty"`
	Grants   *[]string `json:"grants,omitempty"`
}

// minPassword is the shortest password accepted.
const minPassword = 8

func (a *Admin) hash(w http.ResponseWriter, pw *string) (*string, bool) {
	if pw == nil {
		return nil, true
	}
	if len(*pw) < minPassword || len(*pw) > 1024 {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "a password has 8 to 1024 characters")
		return nil, false
	}
	h, err := auth.HashPassword(*pw, a.Params)
	if err != nil {
		api.Error(w, http.StatusInternalServerError, api.CodeInternal, "hash the password: "+err.Error())
		return nil, false
	}
	return &h, true
}

func (a *Admin) listUsers(w http.ResponseWriter, r *http.Request) {
	if !adminOnly(w, r) {
		return
	}
	out := []UserView{}
	a.part(func(p *auth.Part) {
		for _, u := range p.Users() {
			out = append(out, userView(u))
		}
	})
	api.JSON(w, http.StatusOK, out)
}

func (a *Admin) addUser(w http.ResponseWriter, r *http.Request) {
	var req UserRequest
	if !adminOnly(w, r) || !readJSON(w, r, &req) {
		return
	}
	if err := auth.ValidName("user", req.Name); err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, err.Error())
		return
	}
	u := auth.User{Name: req.Name, Created: auth.Now(), Admin: req.Admin != nil && *req.Admin}
	if req.Grants != nil {
		gs, ok := parseGrants(w, *req.Grants)
		if !ok {
			return
		}
		u.Grants = gs
	}
	h, ok := a.hash(w, req.Password)
	if !ok {
		return
	}
	if h != nil {
		u.PasswordHash = *h
	}
	if a.commit(w, r, auth.AddUserOp(u)) {
		api.JSON(w, http.StatusCreated, userView(u))
	}
}

// setUser changes a user; a user may change its own password, only an
// admin anything else.
func (a *Admin) setUser(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var req UserRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Admin != nil || req.Grants != nil {
		if !adminOnly(w, r) {
			return
		}
	} else if _, ok := caller(w, r, name); !ok {
		return
	}
	s := auth.UserSet{Name: name, Admin: req.Admin}
	if req.Grants != nil {
		gs, ok := parseGrants(w, *req.Grants)
		if !ok {
			return
		}
		s.Grants = &gs
	}
	var ok bool
	if s.PasswordHash, ok = a.hash(w, req.Password); !ok {
		return
	}
	if !a.commit(w, r, auth.SetUserOp(s)) {
		return
	}
	var u *auth.User
	a.part(func(p *auth.Part) { u = p.User(name) })
	if u == nil {
		api.Error(w, http.StatusNotFound, api.CodeNotFound, "user "+name+" was deleted meanwhile")
		return
	}
	api.JSON(w, http.StatusOK, userView(*u))
}

func (a *Admin) deleteUser(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !adminOnly(w, r) {
		return
	}
	if p, _ := PrincipalFrom(r.Context()); p.User == name {
		api.Error(w, http.StatusConflict, api.CodeConflict, "an admin cannot delete itself: another admin must")
		return
	}
	if a.commit(w, r, auth.DeleteUserOp(name)) {
		api.JSON(w, http.StatusOK, map[string]string{"deleted": name})
	}
}
