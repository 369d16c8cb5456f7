package node

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mure-dev/mure/internal/api"
	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/dsc"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/hostload"
	"github.com/mure-dev/mure/internal/meta"
)

// Status is the answer of GET /status, read by `mure status`, clients and
// tests: the node's view of the cluster, and each service's status under
// its name.
type Status struct {
	Node      NodeInfo          `json:"node"`
	ClusterID string            `json:"cluster_id"`
	Leader    string            `json:"leader"`
	ReadLease bool              `json:"read_lease"`
	Members   []cluster.Member  `json:"members"`
	Raft      map[string]string `json:"raft"`
	Files     FilesInfo         `json:"files"`
	Store     StoreInfo         `json:"store"`
	// Host is what this node's host uses: its own cgroup's figures when it
	// runs in one (an emulated host, a container), the machine's otherwise.
	Host   hostload.Sample   `json:"host"`
	Config map[string]string `json:"config"`
	// Dispatch is the dispatcher role's holder in this node's view and,
	// when this node has a front door, its state (also under Services;
	// kept here for the readers of earlier versions).
	Dispatch DispatchInfo `json:"dispatch"`
	// ServiceNames lists the running services in start order; Services
	// holds each one's status by name: decode it with Service.
	ServiceNames []string                   `json:"service_names"`
	Services     map[string]json.RawMessage `json:"services"`
}

// Service decodes the status of the named service into into (the
// service's own status type: FilesInfo for "files", APIStatus for "api",
// apps.Status, frontdoor.Status, dsc.Stats for "single_address"). It
// reports false when the node runs no such service.
func (s Status) Service(name string, into any) (bool, error) {
	raw, ok := s.Services[name]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return true, fmt.Errorf("status of service %s: %w", name, err)
	}
	return true, nil
}

// DispatchInfo names the dispatcher role's holder (docs/dispatch.md).
type DispatchInfo struct {
	Holder string            `json:"holder"`
	How    string            `json:"how"`
	Front  *frontdoor.Status `json:"front,omitempty"`
	// Single is the single-address agent's counters (that mode only).
	Single *dsc.Stats `json:"single_address,omitempty"`
}

// NodeInfo names this node.
type NodeInfo struct {
	ID   string `json:"id"`
	HTTP string `json:"http"`
	Peer string `json:"peer"`
}

// FilesInfo counts the catalogue and this node's replication backlog: the
// file service's status.
type FilesInfo struct {
	Live            int `json:"live"`
	Suspended       int `json:"suspended"`
	Pending         int `json:"pending"`
	UnderReplicated int `json:"under_replicated"`
	Backlog         int `json:"backlog"`
	// HotHeld is the hot copies this node holds now, HotAdded and
	// HotDropped those it added and dropped since it started (hot.*,
	// docs/decisions/0039-hot-replicas.md). Flat, like the rest: readers
	// decode files as a map of numbers.
	HotHeld    int    `json:"hot_held"`
	HotAdded   uint64 `json:"hot_added"`
	HotDropped uint64 `json:"hot_dropped"`
}

// StoreInfo describes this node's disk use and checksum checks.
type StoreInfo struct {
	Blobs    int64  `json:"blobs"`
	Bytes    int64  `json:"bytes"`
	DiskFree uint64 `json:"disk_free"`
	// Corrupt counts replicas found corrupt since the start (quarantined
	// and re-replicated); Unverified, those found at start not yet read
	// back; ScrubPasses, the completed scrub passes.
	Corrupt     int64 `json:"corrupt"`
	Unverified  int64 `json:"unverified"`
	ScrubPasses int64 `json:"scrub_passes"`
}

func (n *Node) handleStatus(w http.ResponseWriter, r *http.Request) {
	api.JSON(w, http.StatusOK, n.Status())
}

// Status gathers the node's view of the cluster and its services'.
func (n *Node) Status() Status {
	leader, _ := n.cl.Leader()
	s := Status{
		Node:      NodeInfo{ID: n.ID(), HTTP: n.HTTPAddr(), Peer: n.PeerAddr()},
		ClusterID: n.ClusterID(),
		Leader:    leader,
		ReadLease: n.cl.HasReadLease(),
		Members:   n.cl.Members(),
		Raft:      map[string]string{},
		Services:  map[string]json.RawMessage{},
	}
	stats := n.cl.RaftStats()
	for _, k := range []string{"state", "term", "commit_index", "applied_index", "last_log_index", "last_contact", "num_peers"} {
		s.Raft[k] = stats[k]
	}
	n.cl.FSM().Read(func(st *meta.State) { s.Config = st.Config() })
	s.Host, _ = n.load.Read()
	s.Dispatch.Holder, s.Dispatch.How = n.cl.Dispatcher()
	for _, svc := range n.svcs.list() {
		st := svc.Status()
		switch v := st.(type) {
		case FilesInfo:
			s.Files = v
		case frontdoor.Status:
			s.Dispatch.Front = &v
		case dsc.Stats:
			s.Dispatch.Single = &v
		}
		b, err := json.Marshal(st)
		if err != nil {
			b, _ = json.Marshal(map[string]string{"error": err.Error()})
		}
		s.ServiceNames = append(s.ServiceNames, svc.Name())
		s.Services[svc.Name()] = b
	}
	s.Store.Blobs, s.Store.Bytes = n.st.Usage()
	s.Store.DiskFree, _, _ = n.st.DiskFree()
	checks := n.st.Checks()
	s.Store.Corrupt, s.Store.Unverified, s.Store.ScrubPasses = checks.Corrupt, checks.Unverified, checks.ScrubPasses
	return s
}
