package sessionhttp

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/sessions"
)

// handleWeb serves a web session's app at /web/ID/, JupyterHub-style: by
// reverse proxy from any node, relayed over the peer port to the
// session's node, where the app listens on loopback. The path is kept
// (the app serves under $MURE_BASE_URL).
func (s *Service) handleWeb(w http.ResponseWriter, r *http.Request) {
	sess, user, ok := s.own(w, r, false)
	if !ok {
		return
	}
	if !sameOrigin(r) {
		api.Error(w, http.StatusForbidden, api.CodeForbidden, "a WebSocket to a session's app must come from a page of this node (Origin "+r.Header.Get("Origin")+")")
		return
	}
	if sess.Node == s.m.NodeID() {
		s.webHere(w, r, sess.ID)
		return
	}
	addr, err := s.peerAddr(sess.Node)
	if err != nil {
		api.Error(w, http.StatusBadGateway, api.CodeBadGateway, err.Error())
		return
	}
	rp := &httputil.ReverseProxy{
		Transport: s.peer.Transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "http", Host: addr})
			pr.Out.URL.Path = "/peer" + r.URL.Path
			pr.Out.URL.RawPath = ""
			s.peerHeader(pr.Out.Header, user)
			pr.SetXForwarded()
		},
		ErrorHandler: webFailed(sess.ID),
	}
	rp.ServeHTTP(w, r)
}

func (s *Service) peerWeb(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.m.Record(r.PathValue("id"))
	if !ok || sess.User != r.Header.Get(userHeader) {
		writeErr(w, fmt.Errorf("%w: %s", sessions.ErrNotFound, r.PathValue("id")))
		return
	}
	r.URL.Path = strings.TrimPrefix(r.URL.Path, "/peer")
	r.URL.RawPath = ""
	s.webHere(w, r, sess.ID)
}

// webHere proxies to the app on this node's loopback, with the session's
// secret: the app can tell the node's proxy from another local account.
func (s *Service) webHere(w http.ResponseWriter, r *http.Request, id string) {
	app, err := s.m.Web(id)
	if err != nil {
		writeErr(w, err)
		return
	}
	target := &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(app.Port)}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Del(userHeader)
			pr.Out.Header.Del(appliedHeader)
			pr.Out.Header.Set(sessions.SecretHeader, app.Secret)
			pr.SetXForwarded()
		},
		ErrorHandler: webFailed(id),
	}
	rp.ServeHTTP(w, r)
}

func webFailed(id string) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		if r.Context().Err() != nil {
			return
		}
		api.Error(w, http.StatusBadGateway, api.CodeBadGateway,
			fmt.Sprintf("the app of session %s did not answer (is it listening on $PORT yet?): %v", id, err))
	}
}

// sameOrigin checks a WebSocket upgrade's Origin against the host asked
// (a page elsewhere may not drive the user's app with the user's cookies).
func sameOrigin(r *http.Request) bool {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return true
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}
