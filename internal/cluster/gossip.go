package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/mure-dev/mure/internal/meta"
)

// nodeMeta is what every member gossips about itself.
type nodeMeta struct {
	Cluster string `json:"c"`
	HTTP    string `json:"h"`
	Load    *Load  `json:"l,omitempty"`
	// Zone is the node's --zone label (absent: none, or an older binary).
	Zone string `json:"z,omitempty"`
	// Supports lists the namespaces and versions the node's state machine
	// applies (meta.Supports' string form; absent from older binaries).
	Supports string `json:"s,omitempty"`
	// Hot is the node's busiest files it reads elsewhere (hotreads.go).
	Hot string `json:"x,omitempty"`
}

// GossipState is a member's liveness as seen through gossip.
type GossipState string

// Gossip states.
const (
	GossipAlive   GossipState = "alive"
	GossipSuspect GossipState = "suspect"
	GossipDead    GossipState = "dead"
	GossipLeft    GossipState = "left"
)

// peerView is the last gossip seen about one member.
type peerView struct {
	id   string
	addr string // peer address host:port
	meta nodeMeta
	// supports is meta.Supports parsed when it arrives (nil: not
	// advertised, or unreadable), so that the leader's check of each
	// proposal (checkSupported) parses nothing.
	supports meta.Supports
	state    GossipState
	since    time.Time
	// rtt is the latest round trips of memberlist's probes of it, as
	// this node measured them (rtt.go).
	rtt rttSamples
}

// gossip owns memberlist and the view of members it produces.
type gossip struct {
	list  *memberlist.Memberlist
	log   *slog.Logger
	kick  func()
	metaF func() nodeMeta

	mu    sync.Mutex
	peers map[string]*peerView
}

func (c *Cluster) startGossip() error {
	t := c.cfg.Timing
	g := &gossip{log: c.log, kick: c.kick, peers: map[string]*peerView{}, metaF: c.localMeta}
	mc := memberlist.DefaultLANConfig()
	mc.Name = c.cfg.NodeID
	mc.Transport = c.cfg.Mux.GossipTransport()
	host, port, err := net.SplitHostPort(c.cfg.Mux.Addr())
	if err != nil {
		return fmt.Errorf("gossip: advertise address: %w", err)
	}
	mc.BindAddr, mc.AdvertiseAddr = host, host
	mc.BindPort, _ = strconv.Atoi(port)
	mc.AdvertisePort = mc.BindPort
	mc.SecretKey = c.cfg.Key.GossipKey()
	mc.Delegate = g
	mc.Events = g
	mc.Ping = g
	mc.Merge = &mergeGuard{c: c}
	mc.ProbeInterval, mc.ProbeTimeout, mc.GossipInterval = t.GossipProbeInterval, t.GossipProbeTimeout, t.GossipInterval
	mc.SuspicionMult = t.GossipSuspicionMult
	mc.PushPullInterval = 10 * t.GossipProbeInterval
	mc.TCPTimeout = 2 * time.Second
	mc.Logger = log.New(&logFilter{log: c.log.With("part", "gossip")}, "", 0)
	list, err := memberlist.Create(mc)
	if err != nil {
		return fmt.Errorf("gossip: start: %w", err)
	}
	g.list = list
	c.gossip = g
	return nil
}

// NodeMeta implements memberlist.Delegate.
func (g *gossip) NodeMeta(limit int) []byte {
	b, _ := json.Marshal(g.metaF())
	if len(b) > limit {
		// memberlist would refuse it: the others would lose this node's
		// address and figures (TestNodeMetaFits keeps this from happening).
		g.log.Error("node metadata over memberlist's limit: gossiping none", "bytes", len(b), "limit", limit)
		return nil
	}
	return b
}

// NotifyMsg, GetBroadcasts, LocalState and MergeRemoteState implement
// memberlist.Delegate; mure gossips nothing but node metadata.
func (g *gossip) NotifyMsg([]byte)                           {}
func (g *gossip) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (g *gossip) LocalState(join bool) []byte                { return nil }
func (g *gossip) MergeRemoteState(buf []byte, join bool)     {}

// NotifyJoin implements memberlist.EventDelegate.
func (g *gossip) NotifyJoin(n *memberlist.Node) { g.update(n, GossipAlive) }

// NotifyUpdate implements memberlist.EventDelegate.
func (g *gossip) NotifyUpdate(n *memberlist.Node) { g.update(n, GossipAlive) }

// NotifyLeave implements memberlist.EventDelegate.
func (g *gossip) NotifyLeave(n *memberlist.Node) {
	st := GossipDead
	if n.State == memberlist.StateLeft {
		st = GossipLeft
	}
	g.update(n, st)
}

func (g *gossip) update(n *memberlist.Node, st GossipState) {
	var m nodeMeta
	_ = json.Unmarshal(n.Meta, &m)
	g.mu.Lock()
	p := g.peers[n.Name]
	if p == nil || p.state != st {
		p = &peerView{id: n.Name, since: time.Now()}
		g.peers[n.Name] = p
	}
	p.addr = net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
	p.state = st
	if len(n.Meta) > 0 {
		p.meta = m
		p.supports = nil
		if m.Supports != "" {
			p.supports, _ = meta.ParseSupports(m.Supports)
		}
	}
	g.mu.Unlock()
	if g.kick != nil {
		g.kick()
	}
}

// supports returns what every member seen advertises it supports, for
// those that advertise it.
func (g *gossip) supports() map[string]meta.Supports {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]meta.Supports, len(g.peers)+1)
	for id, p := range g.peers {
		if p.supports != nil {
			out[id] = p.supports
		}
	}
	return out
}

// alive reports whether member id is seen alive or suspect. It reads the
// one record only: view's refresh from memberlist turns alive into
// suspect, which does not change the answer, and costs a copy of every
// member (this runs for every write and every replica to fetch).
func (g *gossip) alive(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	p, ok := g.peers[id]
	return ok && (p.state == GossipAlive || p.state == GossipSuspect)
}

// view returns a copy of every member seen, refreshing suspect states from
// memberlist.
func (g *gossip) view() map[string]peerView {
	out := map[string]peerView{}
	g.mu.Lock()
	for id, p := range g.peers {
		out[id] = *p
	}
	g.mu.Unlock()
	if g.list != nil {
		for _, n := range g.list.Members() {
			if n.State == memberlist.StateSuspect {
				if p, ok := out[n.Name]; ok {
					p.state = GossipSuspect
					out[n.Name] = p
				}
			}
		}
	}
	return out
}

// mergeGuard refuses to merge with members of another cluster.
type mergeGuard struct{ c *Cluster }

// NotifyMerge implements memberlist.MergeDelegate.
func (m *mergeGuard) NotifyMerge(peers []*memberlist.Node) error {
	ours := m.c.ClusterID()
	for _, p := range peers {
		var meta nodeMeta
		if json.Unmarshal(p.Meta, &meta) != nil || meta.Cluster == "" || ours == "" {
			continue
		}
		if meta.Cluster != ours {
			err := fmt.Errorf("%w: this data directory belongs to cluster %s, but node %s (%s:%d) is in cluster %s",
				ErrOtherCluster, ours, p.Name, p.Addr, p.Port, meta.Cluster)
			m.c.refusedMu.Lock()
			m.c.refused = err
			m.c.refusedMu.Unlock()
			return err
		}
	}
	return nil
}

// logFilter forwards memberlist's warnings and errors to slog and drops its
// debug chatter.
type logFilter struct{ log *slog.Logger }

func (f *logFilter) Write(p []byte) (int, error) {
	sc := bufio.NewScanner(strings.NewReader(string(p)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "[ERR]"):
			f.log.Error(strings.TrimSpace(line[strings.Index(line, "[ERR]")+5:]))
		case strings.Contains(line, "[WARN]"):
			f.log.Warn(strings.TrimSpace(line[strings.Index(line, "[WARN]")+6:]))
		}
	}
	return len(p), nil
}

var _ io.Writer = (*logFilter)(nil)

// mergeRefusal returns the last refusal to merge with another cluster.
func (c *Cluster) mergeRefusal() error {
	c.refusedMu.Lock()
	defer c.refusedMu.Unlock()
	return c.refused
}
