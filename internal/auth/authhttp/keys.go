package authhttp

import (
	"net/http"
	"time"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/auth"
)

// KeyView is an access key as the API shows it; Secret only in the answer
// that made it.
type KeyView struct {
	ID      string    `json:"id"`
	User    string    `json:"user"`
	Secret  string    `json:"secret,omitempty"`
	Created time.Time `json:"created"`
}

func (a *Admin) addKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		User string `json:"user,omitempty"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	if a.Open {
		api.Error(w, http.StatusConflict, api.CodeConflict, "this node runs with --auth=false: its S3 API accepts any access key and secret (and unsigned requests), so no key is needed; keys are made once --auth is on")
		return
	}
	p, ok := caller(w, r, req.User)
	if !ok {
		return
	}
	if req.User == "" {
		req.User = p.User
	}
	if a.Sealer == nil {
		api.Error(w, http.StatusInternalServerError, api.CodeInternal, "this node cannot seal secrets (no cluster key)")
		return
	}
	id, secret := auth.NewAccessKey()
	k := auth.AccessKey{ID: id, User: req.User, Sealed: a.Sealer.Seal(id, secret), Created: auth.Now()}
	if a.commit(w, r, auth.AddKeyOp(k)) {
		api.JSON(w, http.StatusCreated, KeyView{ID: id, User: k.User, Secret: secret, Created: k.Created})
	}
}

func (a *Admin) listKeys(w http.ResponseWriter, r *http.Request) {
	user, ok := listed(w, r)
	if !ok {
		return
	}
	out := []KeyView{}
	a.part(func(ap *auth.Part) {
		for _, k := range ap.Keys(user) {
			out = append(out, KeyView{ID: k.ID, User: k.User, Created: k.Created})
		}
	})
	api.JSON(w, http.StatusOK, out)
}

func (a *Admin) deleteKey(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var k *auth.AccessKey
	a.part(func(ap *auth.Part) { k = ap.Key(id) })
	if k == nil {
		api.Error(w, http.StatusNotFound, api.CodeNotFound, "no access key "+id)
		return
	}
	if _, ok := caller(w, r, k.User); !ok {
		return
	}
	if a.commit(w, r, auth.DeleteKeyOp(id)) {
		api.JSON(w, http.StatusOK, map[string]string{"deleted": id})
	}
}
