package cluster

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/hashicorp/raft"

	"github.com/mure-dev/mure/internal/meta"
)

// Handler serves the cluster's part of the peer API (mounted under
// /peer/cluster/ on the peer port; only nodes holding the cluster key get
// there).
func (c *Cluster) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /peer/cluster/apply", c.handleApply)
	mux.HandleFunc("POST /peer/cluster/apply-batch", c.handleApplyBatch)
	mux.HandleFunc("POST /peer/cluster/op", c.handleOp)
	mux.HandleFunc("POST /peer/cluster/lease", c.handleLease)
	mux.HandleFunc("POST /peer/cluster/readindex", c.handleReadIndex)
	mux.HandleFunc("POST /peer/cluster/leave", c.handleLeave)
	mux.HandleFunc("POST /peer/cluster/remove", c.handleRemove)
	return mux
}

func (c *Cluster) handleApply(w http.ResponseWriter, r *http.Request) {
	var cmd meta.Command
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&cmd); err != nil {
		peerError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	if !c.IsLeader() {
		peerError(w, http.StatusServiceUnavailable, "no_leader", "not the leader")
		return
	}
	c.answerApply(w, r, proposal{cmd: &cmd})
}

func (c *Cluster) handleOp(w http.ResponseWriter, r *http.Request) {
	var op meta.Op
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&op); err != nil {
		peerError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	if !c.IsLeader() {
		peerError(w, http.StatusServiceUnavailable, "no_leader", "not the leader")
		return
	}
	c.answerApply(w, r, proposal{op: &op})
}

func (c *Cluster) answerApply(w http.ResponseWriter, r *http.Request, p proposal) {
	res, err := c.proposeLocal(r.Context(), p)
	if err != nil {
		writePeerErr(w, err)
		return
	}
	writeJSON(w, res.Wire())
}

func (c *Cluster) handleLease(w http.ResponseWriter, r *http.Request) {
	var req leaseReq
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		peerError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	idx, err := c.grantLease(req.Node)
	if err != nil {
		writePeerErr(w, err)
		return
	}
	writeJSON(w, leaseResp{Index: idx})
}

func (c *Cluster) handleReadIndex(w http.ResponseWriter, r *http.Request) {
	if !c.IsLeader() {
		peerError(w, http.StatusServiceUnavailable, "no_leader", "not the leader")
		return
	}
	idx, err := c.ReadIndex(r.Context())
	if err != nil {
		writePeerErr(w, err)
		return
	}
	writeJSON(w, leaseResp{Index: idx})
}

func writePeerErr(w http.ResponseWriter, err error) {
	status, code := peerErrStatus(err)
	peerError(w, status, code, err.Error())
}

// peerErrStatus is how a refusal is told to a peer (PeerError.Unwrap reads
// the code back).
func peerErrStatus(err error) (int, string) {
	switch {
	case errors.Is(err, ErrNotLeaseReady):
		return http.StatusServiceUnavailable, "not_ready"
	case errors.Is(err, ErrNoLeader), errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost):
		return http.StatusServiceUnavailable, "no_leader"
	case errors.Is(err, meta.ErrUnsupported):
		return http.StatusConflict, "unsupported"
	case errors.Is(err, ErrRefused):
		return http.StatusConflict, "refused"
	default:
		return http.StatusInternalServerError, "internal"
	}
}

func peerError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": code})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
