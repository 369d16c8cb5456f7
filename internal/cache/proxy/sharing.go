package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/cache"
)

// Peer is a node that may own keys: its ID and peer address.
type Peer struct {
	ID, Addr string
}

// Ring names each key's owner among the live nodes.
type Ring interface {
	// Owner returns the owner of key, and whether it is this node.
	Owner(key string) (owner Peer, self bool)
	// Others returns the live nodes but this one.
	Others() []Peer
}

// Rendezvous returns the peer with the highest hash of (its ID, key):
// highest random weight hashing, so that a peer joining or leaving moves
// only the keys it wins or held (about 1/N of them).
func Rendezvous(key string, peers []Peer) Peer {
	var best Peer
	var bestScore uint64
	for _, p := range peers {
		sum := sha256.Sum256([]byte(p.ID + "\x00" + key))
		score := binary.BigEndian.Uint64(sum[:8])
		if score > bestScore || best.ID == "" || (score == bestScore && p.ID < best.ID) {
			best, bestScore = p, score
		}
	}
	return best
}

// MemberRing is a Ring over a changing member list, read at most every
// refresh.
type MemberRing struct {
	self    string
	members func() []Peer
	refresh time.Duration

	mu    sync.Mutex
	peers []Peer
	at    time.Time
}

// NewMemberRing returns a ring whose members come from members (the live
// nodes, this one included), cached for refresh.
func NewMemberRing(self string, members func() []Peer, refresh time.Duration) *MemberRing {
	return &MemberRing{self: self, members: members, refresh: refresh}
}

func (r *MemberRing) current() []Peer {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.peers == nil || time.Since(r.at) > r.refresh {
		r.peers, r.at = r.members(), time.Now()
	}
	return r.peers
}

// Owner implements Ring.
func (r *MemberRing) Owner(key string) (Peer, bool) {
	peers := r.current()
	if len(peers) == 0 {
		return Peer{ID: r.self}, true
	}
	p := Rendezvous(key, peers)
	return p, p.ID == r.self
}

// Others implements Ring.
func (r *MemberRing) Others() []Peer {
	var out []Peer
	for _, p := range r.current() {
		if p.ID != r.self {
			out = append(out, p)
		}
	}
	return out
}

// Sharing makes the proxies of a cluster one cache: each key is fetched
// and stored by its owner; the other nodes relay it over the peer port.
type Sharing struct {
	Ring Ring
	// Client reaches other nodes' peer API (the cluster's peer client).
	Client func() *http.Client
}

// Peer routes and the fields that carry a relayed request.
const (
	peerFetchRoute  = "/peer/cache/fetch"
	peerRemoveRoute = "/peer/cache/remove"
	hostField       = "X-Mure-Cache-Host"
)

// errNoOwner: the owner could not be asked; the node serves on its own.
var errNoOwner = errors.New("the key's owner did not answer")

// relay asks the key's owner for the request and streams its answer. It
// returns errNoOwner (having written nothing) when the owner could not be
// reached or does not run the proxy, so that the caller serves alone.
func (h *Handler) relay(w http.ResponseWriter, r *http.Request, owner Peer) error {
	u := "http://" + owner.Addr + peerFetchRoute + "?uri=" + url.QueryEscape(r.URL.RequestURI())
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, u, nil)
	if err != nil {
		return errNoOwner
	}
	req.Header = r.Header.Clone()
	for _, f := range cache.HopByHop(r.Header) {
		req.Header.Del(f)
	}
	req.Header.Set(hostField, r.Host)
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		req.Header.Add("X-Forwarded-For", ip)
	}
	// An owner cut off without a word (packets dropped) must not hold the
	// client: without a response header in time, the node serves alone.
	timer := time.AfterFunc(h.limits.HeaderTimeout, cancel)
	resp, err := h.share.Client().Do(req)
	if err != nil || !timer.Stop() {
		if err == nil {
			resp.Body.Close()
		}
		h.log.Debug("cache: owner unreachable; serving alone", "owner", owner.ID, "err", err)
		if r.Context().Err() != nil {
			return nil // the client is gone: nothing to serve
		}
		return errNoOwner
	}
	defer resp.Body.Close()
	if resp.Header.Get("Cache-Status") == "" {
		// Not the proxy's answer (no route there: the owner runs no proxy).
		return errNoOwner
	}
	h.metrics.result(resultPeer)
	copyHeader(w.Header(), resp.Header)
	w.Header().Set("Cache-Status", resp.Header.Get("Cache-Status")+", "+
		cache.Status{Fwd: cache.FwdMiss, FwdStatus: resp.StatusCode, Detail: "owner-" + owner.ID}.String(cacheName))
	w.WriteHeader(resp.StatusCode)
	if r.Method == http.MethodHead {
		return nil
	}
	if n := resp.ContentLength; n < 0 || n > 1<<20 {
		flush(w)
	}
	n, err := io.Copy(w, newIdleBody(resp.Body, h.limits.BodyTimeout, cancel))
	h.metrics.served("peer", n)
	if err != nil {
		panic(http.ErrAbortHandler) // cut short: the client must see it
	}
	return nil
}

// ServePeerFetch answers another node's relayed request as the owner:
// from this node's cache, or from the origin (never relayed again).
func (h *Handler) ServePeerFetch(w http.ResponseWriter, r *http.Request) {
	uri, err := url.ParseRequestURI(r.URL.Query().Get("uri"))
	if err != nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.Error(w, "bad relayed request", http.StatusBadRequest)
		return
	}
	in := r.Clone(r.Context())
	in.URL, in.RequestURI, in.Host = uri, uri.RequestURI(), r.Header.Get(hostField)
	in.Header.Del(hostField)
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		in.RemoteAddr = net.JoinHostPort(strings.TrimSpace(xff[len(xff)-1]), "0")
	}
	h.serve(w, in, true)
}

// ServePeerRemove removes keys another node invalidated (an unsafe
// request it forwarded, or a purge).
func (h *Handler) ServePeerRemove(w http.ResponseWriter, r *http.Request) {
	var req removal
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.removeLocal(req)
	w.WriteHeader(http.StatusNoContent)
}

// removal is a set of keys, or key prefixes, to remove.
type removal struct {
	Keys     []string `json:"keys,omitempty"`
	Prefixes []string `json:"prefixes,omitempty"`
}

func (h *Handler) removeLocal(rm removal) int {
	n := 0
	for _, k := range rm.Keys {
		n += h.tiers.Remove(k)
	}
	for _, p := range rm.Prefixes {
		n += h.tiers.RemovePrefix(p)
	}
	return n
}

// broadcast sends a removal to every other live node, in the background
// (best effort: a node that misses it holds copies its owner no longer
// sends, which age out; purges are also recorded in the cluster).
func (h *Handler) broadcast(rm removal) {
	if h.share == nil {
		return
	}
	body, _ := json.Marshal(rm)
	for _, p := range h.share.Ring.Others() {
		h.bg.Add(1)
		go func() {
			defer h.bg.Done()
			ctx, cancel := context.WithTimeout(h.bgCtx, 5*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.Addr+peerRemoveRoute, strings.NewReader(string(body)))
			if err != nil {
				return
			}
			resp, err := h.share.Client().Do(req)
			if err != nil {
				h.log.Debug("cache: removal not delivered", "peer", p.ID, "err", err)
				return
			}
			resp.Body.Close()
		}()
	}
}
