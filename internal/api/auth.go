package api

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// RequireToken wraps next so that requests must carry
// "Authorization: Bearer token". An empty token disables the check.
// Paths in open (exact matches) never need the token.
func RequireToken(token string, open []string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range open {
			if r.URL.Path == p {
				next.ServeHTTP(w, r)
				return
			}
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mure"`)
			Error(w, http.StatusUnauthorized, CodeUnauthorized, "missing or wrong API token: send 'Authorization: Bearer TOKEN' (see mure serve --token)")
			return
		}
		next.ServeHTTP(w, r)
	})
}
