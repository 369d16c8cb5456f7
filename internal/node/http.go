package node

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mure-dev/mure/internal/admission"
	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/files/filehttp"
	"github.com/mure-dev/mure/internal/files/s3"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/sessions/sessionhttp"
)

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }

// clientHandlers are the client API (docs/api.md) and the monitoring
// port's part of it (uiport.go: no admission, no S3).
func (n *Node) clientHandlers() (client, ui http.Handler) {
	mux := n.routes
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		api.JSON(w, http.StatusOK, map[string]string{"status": "ok", "node": n.ID()})
	})
	mux.HandleFunc("GET /readyz", n.handleReady)
	mux.HandleFunc("GET /status", n.handleStatus)
	mux.HandleFunc("GET /config", n.handleConfig)
	mux.HandleFunc("PUT /config/{key}", n.handleSetConfig)
	mux.HandleFunc("POST /nodes/leave", n.handleLeave)
	mux.HandleFunc("DELETE /nodes/{id}", n.handleRemove)
	mux.Handle("GET /metrics", promhttp.HandlerFor(n.reg, promhttp.HandlerOpts{}))
	if n.cfg.DebugFaults {
		mux.HandleFunc("POST /debug/isolate", n.handleIsolate)
	}
	n.auth.admin.Routes(mux)
	mux.HandleFunc("/", api.NotFound)
	// Admission after authentication (an unauthenticated request cannot
	// take a slot) and inside instrumentation (rejections are counted).
	// The peer API is not limited: a client request waiting on a peer
	// while that peer's requests wait here would deadlock.
	// The dashboard and its history have their own budget (the monitor's):
	// an overloaded node still draws its graphs. An attached terminal or a
	// session's web app holds its request open: the connection limit
	// bounds those, not the admission slots.
	exempt := append(slices.Clone(admission.DefaultExempt), "/history", "/ui/", sessionhttp.AttachPrefix, sessionhttp.WebPrefix)
	lim := admission.New(admission.Config{MaxInFlight: n.cfg.MaxInFlight, MaxQueue: n.cfg.MaxQueue, Exempt: exempt}, n.reg)
	n.admission = lim // the front's reads take its slots too
	wlim := admission.New(admission.Config{MaxInFlight: cmp.Or(n.cfg.MaxWriteInFlight, DefaultMaxWriteInFlight),
		MaxQueue: cmp.Or(n.cfg.MaxWriteQueue, DefaultMaxWriteQueue), Subsystem: "write_admission"}, n.reg)
	n.writeAdmission = wlim // S3's requests take their slots too (s3Service)
	instrument := n.instrumenter()
	return instrument(n.s3First(n.guarded(lim.Wrap(writesThrough(wlim, n.route(mux)))))),
		instrument(n.guarded(n.uiOnly(n.route(mux))))
}

// s3First hands the requests signed with SigV4 to the S3 API (--s3), which
// checks their signature itself and then takes the admission slots of the
// client API (s3.Config.Admission): S3 clients may then use the client
// port, and so the front door (docs/access.md). Other requests go to next.
func (n *Node) s3First(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.s3 != nil && s3.Signed(r) {
			if h := n.s3.Handler(); h != nil {
				h.ServeHTTP(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Defaults of the write limits (Config.MaxWriteInFlight, MaxWriteQueue).
const (
	DefaultMaxWriteInFlight = 64 // decision 0049
	DefaultMaxWriteQueue    = 128
)

// writesThrough sends writes of files through the write limiter and every
// other request straight to next.
func writesThrough(wlim *admission.Limiter, next http.Handler) http.Handler {
	limited := wlim.Wrap(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method == http.MethodPut || r.Method == http.MethodDelete) && strings.HasPrefix(r.URL.Path, filehttp.FilesPrefix) {
			limited.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// route sends file keys straight to the file service (no path cleaning)
// and everything else through mux, answering a known path with a wrong
// method by the JSON envelope rather than the mux's plain text.
func (n *Node) route(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, filehttp.FilesPrefix) {
			n.files.serveFiles(w, r)
			return
		}
		if _, pattern := mux.Handler(r); pattern == "/" {
			probe := r.Clone(r.Context())
			for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete} {
				probe.Method = m
				if _, p := mux.Handler(probe); p != "" && p != "/" {
					w.Header().Set("Allow", m)
					api.Error(w, http.StatusMethodNotAllowed, api.CodeMethod, r.Method+" is not allowed on "+r.URL.Path+"; use "+m)
					return
				}
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// peerHandler is the node-to-node API, reachable only through the
// authenticated peer port.
func (n *Node) peerHandler() http.Handler {
	mux := n.peerRoutes
	mux.Handle("/peer/cluster/", n.cl.Handler())
	mux.HandleFunc("/", api.NotFound)
	return mux
}

func (n *Node) handleReady(w http.ResponseWriter, r *http.Request) {
	leader, _ := n.cl.Leader()
	switch {
	case leader == "":
		api.Unavailable(w, 1, api.CodeNoQuorum, "no leader: the cluster has no quorum or is electing one")
	case !n.cl.HasReadLease():
		api.Unavailable(w, 1, api.CodeNoQuorum, "this node holds no read lease yet (catching up with the leader)")
	default:
		api.JSON(w, http.StatusOK, map[string]string{"status": "ready", "node": n.ID(), "leader": leader})
	}
}

func (n *Node) handleConfig(w http.ResponseWriter, r *http.Request) {
	var cfg map[string]string
	n.cl.FSM().Read(func(st *meta.State) { cfg = st.Config() })
	api.JSON(w, http.StatusOK, cfg)
}

func (n *Node) handleSetConfig(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4096))
	if err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, "a setting's value is at most 4096 bytes")
		return
	}
	value := strings.TrimSpace(string(b))
	if err := meta.ValidateSetting(key, value); err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	res, err := n.cl.Apply(ctx, meta.Command{Kind: meta.KindSetConfig, Key: key, Value: value})
	if errors.Is(err, cluster.ErrRefused) {
		// A setting of a namespace version some voter does not support.
		api.Error(w, http.StatusConflict, api.CodeConflict, err.Error())
		return
	}
	if err != nil {
		api.Unavailable(w, 1, api.CodeNoQuorum, "cannot change the setting now: "+err.Error())
		return
	}
	if res.Err != nil {
		api.Error(w, http.StatusBadRequest, api.CodeBadRequest, res.Err.Error())
		return
	}
	n.handleConfig(w, r)
}

func (n *Node) handleLeave(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if err := n.cl.Leave(ctx); err != nil {
		api.Unavailable(w, 1, api.CodeUnavailable, "could not leave the cluster: "+err.Error())
		return
	}
	api.JSON(w, http.StatusOK, map[string]string{"left": n.ID(), "note": "the node has left the cluster and is stopping"})
	n.leftOnce.Do(func() { close(n.left) })
}

func (n *Node) handleRemove(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	id := r.PathValue("id")
	if err := n.cl.Remove(ctx, id); err != nil {
		var pe *cluster.PeerError
		if errors.Is(err, cluster.ErrRefused) || errors.As(err, &pe) && pe.Status == http.StatusConflict {
			api.Error(w, http.StatusConflict, api.CodeConflict, err.Error())
			return
		}
		api.Unavailable(w, 1, api.CodeNoQuorum, "could not remove "+id+": "+err.Error())
		return
	}
	api.JSON(w, http.StatusOK, map[string]string{"removed": id})
}

// handleIsolate cuts the node off from its peers (?on=1) or heals it
// (?on=0): the partition seam of the robustness tests.
func (n *Node) handleIsolate(w http.ResponseWriter, r *http.Request) {
	on := r.URL.Query().Get("on") == "1"
	n.mux.SetIsolated(on)
	n.log.Warn("fault injection: isolation", "on", on)
	api.JSON(w, http.StatusOK, map[string]bool{"isolated": on})
}
