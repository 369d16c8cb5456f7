package node

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/files"
	"github.com/mure-dev/mure/internal/files/filehttp"
	"github.com/mure-dev/mure/internal/files/filepeer"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/service"
	"github.com/mure-dev/mure/internal/store"
)

// errFilesNotStarted: the leader was asked to fence before the file
// service started (a write proposed in the first moments of a start).
var errFilesNotStarted = errors.New("the file service has not started yet")

// filesService is the file service as a node Service ("files"): the Go
// API (files.Service) with its faces, the native HTTP one (filehttp) and
// the peer one (filepeer). It lives in node because it composes those
// three packages, which import files.
type filesService struct {
	cfg files.Config
	st  *store.Store
	fsm atomic.Pointer[meta.FSM]
	svc atomic.Pointer[files.Service] // set by Start; the cluster's barrier reads it
	web atomic.Pointer[filehttp.Handler]
}

func (f *filesService) Name() string { return "files" }

func (f *filesService) Start(_ context.Context, env service.Env) error {
	cfg := f.cfg
	cfg.Logger, cfg.Metrics = env.Logger, files.NewMetrics(env.Metrics)
	svc := files.New(cfg, env.Cluster, f.st, filepeer.New(env.Cluster.PeerClient))
	web := filehttp.New(svc)
	web.Routes(env.Routes)
	filepeer.Routes(env.PeerRoutes, svc)
	svc.Start()
	f.fsm.Store(env.Cluster.FSM())
	f.web.Store(web)
	f.svc.Store(svc)
	return nil
}

func (f *filesService) Stop(context.Context) error {
	if svc := f.svc.Load(); svc != nil {
		return svc.Close()
	}
	return nil
}

// Status is the catalogue's figures and this node's replication backlog.
func (f *filesService) Status() any {
	var s FilesInfo
	if svc := f.svc.Load(); svc != nil {
		s.Backlog = svc.Backlog()
		h := svc.Hot()
		s.HotHeld, s.HotAdded, s.HotDropped = h.Held, h.Added, h.Dropped
	}
	if fsm := f.fsm.Load(); fsm != nil {
		fsm.Read(func(st *meta.State) {
			s.Live, s.Suspended = st.Counts()
			s.Pending = st.Pending()
			s.UnderReplicated = st.UnderReplicated(meta.ParseConfig(st.Config()).Replicas)
		})
	}
	return s
}

// barrier is the cluster's Barrier: the leader fences the nodes a write
// invalidated.
func (f *filesService) barrier(ctx context.Context, r *meta.Result) error {
	svc := f.svc.Load()
	if svc == nil {
		return errFilesNotStarted
	}
	return svc.Barrier(ctx, r)
}

// serveFiles sends a file key to the file service, with no path cleaning.
func (f *filesService) serveFiles(w http.ResponseWriter, r *http.Request) {
	if web := f.web.Load(); web != nil {
		web.ServeFiles(w, r)
		return
	}
	api.Unavailable(w, 1, api.CodeUnavailable, errFilesNotStarted.Error())
}
