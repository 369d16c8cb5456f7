package frontdoor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/dispatch"
	"github.com/mure-dev/mure/internal/meta"
)

// Hand-over modes.
const (
	// ModeRedirect answers each new connection's requests with 307 to the
	// chosen node; the client then talks to the node directly.
	ModeRedirect = "redirect"
	// ModeProxy relays the connection's bytes to the chosen node (splice).
	ModeProxy = "proxy"
	// ModeSingleAddress opens no listener: every node owns the address
	// (internal/dsc) and the holder only places client SYNs, through
	// Choose, when OnRole has made it the SYN master.
	ModeSingleAddress = "single-address"
)

// Config configures a front door.
type Config struct {
	// Addr is the front door's address, bound only while this node holds
	// the dispatcher role (a virtual IP's address in a deployment).
	Addr string
	// Mode is ModeRedirect (default) or ModeProxy.
	Mode string
	// Policy names the scheduling policy (dispatch.PolicyNames; default
	// least-connections).
	Policy string
	// Affinity, when positive, sends a client address back to the node it
	// was sent to for this long after its last connection; AffinityMax
	// caps the table (default 65536).
	Affinity    time.Duration
	AffinityMax int
	// MaxConns bounds the front door's open connections (default 10000),
	// MaxConnsPerClient those of one client address (default 256).
	MaxConns, MaxConnsPerClient int
	// HeaderTimeout bounds the wait for a request's headers in redirect
	// mode (default 5 s); IdleTimeout a kept-alive connection's idleness
	// (default 30 s). In proxy mode the node's own timeouts apply.
	HeaderTimeout, IdleTimeout time.Duration
	// DialTimeout bounds the connection to the chosen node in proxy mode
	// (default 2 s); a node that does not answer is skipped.
	DialTimeout time.Duration
	// MaxAge excludes a node whose load report is older than this
	// (default 5 s).
	MaxAge time.Duration
	// VIP, when set ("ADDR/PREFIX"), is added to VIPIface while this node
	// holds the role and announced by gratuitous ARP; removed after.
	VIP, VIPIface string
	// Poll is how often the role and the nodes' figures are checked
	// (default 50 ms).
	Poll time.Duration
	// ProbeInterval is how often the holder dials every node's client port
	// (prober); a node found dead gets no new connection before gossip
	// says so (default 100 ms; negative: off).
	ProbeInterval time.Duration
	// Local, when set, serves a connection the policy sends to this very
	// node without relaying it (proxy mode): the node's own HTTP server
	// takes the accepted connection as its own. It reports false when it
	// cannot (stopping).
	Local func(net.Conn) bool
	// SYNPort, in single-address mode, is the UDP port on which every
	// node receives the SYNs the master forwards (default 7945).
	SYNPort int
	// SYNPath, in single-address mode, is how SYNs are placed (dsc.Path*;
	// default auto).
	SYNPath string
	// OnRole, in single-address mode, is told when this node takes the
	// role (true) and gives it up (false).
	OnRole func(active bool)
	// PolicyOverride, when set, returns the cluster-wide policy setting
	// (dispatch.policy), which wins over Policy when not empty.
	PolicyOverride func() string
	// Key signs hand-overs (transport.Key.HandoverKey).
	Key    []byte
	Logger *slog.Logger
}

func (c *Config) defaults() error {
	if c.Mode == "" {
		c.Mode = ModeRedirect
	}
	if c.Mode != ModeRedirect && c.Mode != ModeProxy && c.Mode != ModeSingleAddress {
		return fmt.Errorf("front door mode %q: use %s, %s or %s", c.Mode, ModeRedirect, ModeProxy, ModeSingleAddress)
	}
	switch {
	case c.SYNPath != "" && c.SYNPath != "auto" && c.Mode != ModeSingleAddress:
		return fmt.Errorf("a SYN path (%q) applies to the single-address mode only (--front-mode %s)", c.SYNPath, ModeSingleAddress)
	case !slices.Contains([]string{"", "auto", "kernel", "user", "isn-hash"}, c.SYNPath):
		return fmt.Errorf("SYN path %q: use auto, kernel, user or isn-hash", c.SYNPath)
	}
	if c.Policy == "" {
		c.Policy = dispatch.NameLeastConnections
	}
	setDefault(&c.AffinityMax, 65536)
	setDefault(&c.MaxConns, 10000)
	setDefault(&c.MaxConnsPerClient, 256)
	setDefault(&c.HeaderTimeout, 5*time.Second)
	setDefault(&c.IdleTimeout, 30*time.Second)
	setDefault(&c.DialTimeout, 2*time.Second)
	setDefault(&c.MaxAge, 5*time.Second)
	setDefault(&c.Poll, 50*time.Millisecond)
	setDefault(&c.ProbeInterval, 100*time.Millisecond)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if (c.VIP == "") != (c.VIPIface == "") {
		return errors.New("a front door virtual IP needs both --front-vip and --front-iface")
	}
	return nil
}

func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Cluster is what the front door needs of the node's cluster seat.
type Cluster interface {
	NodeID() string
	Dispatcher() (id, how string)
	Members() []cluster.Member
	Alive(id string) bool
}

// Door is one node's front door. Every node that has one runs it; only the
// dispatcher role's holder binds Addr and schedules connections.
type Door struct {
	cfg   Config
	cl    Cluster
	log   *slog.Logger
	sched *dispatch.Scheduler
	stats stats

	mu      sync.Mutex
	holder  string
	how     string
	active  bool
	since   time.Time
	ln      *limitListener
	srv     *http.Server // redirect mode
	bindErr string
	vipAt   time.Time                    // last time the VIP was added or renewed (tick goroutine only)
	seen    map[string]dispatch.NodeLoad // last figures reported to sched
	relays  map[net.Conn]struct{}        // proxy mode: client sides being relayed
	probe   *prober                      // nodes' client ports, while this node holds the role
	probing context.CancelFunc           // stops the prober (tick goroutine only)

	wg sync.WaitGroup // serving goroutines
}

// New returns a front door; Run starts it.
func New(cfg Config, cl Cluster) (*Door, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		return nil, fmt.Errorf("front door address %q: %w", cfg.Addr, err)
	}
	pol, err := dispatch.NewPolicy(cfg.Policy, nil)
	if err != nil {
		return nil, fmt.Errorf("front door: %w (one of %v)", err, dispatch.PolicyNames)
	}
	var aff *dispatch.Affinity
	if cfg.Affinity > 0 {
		aff = dispatch.NewAffinity(dispatch.AffinityConfig{TTL: cfg.Affinity, Capacity: cfg.AffinityMax, Key: dispatch.ByAddr})
	}
	d := &Door{cfg: cfg, cl: cl, log: cfg.Logger, seen: map[string]dispatch.NodeLoad{}, relays: map[net.Conn]struct{}{}}
	d.sched = dispatch.NewScheduler(dispatch.Config{Policy: pol, MaxAge: cfg.MaxAge, Affinity: aff})
	d.probe = newProber(max(cfg.ProbeInterval, time.Millisecond), cfg.Logger)
	d.stats.init()
	return d, nil
}

// Run checks the role every Poll until ctx is done, then gives the role up
// (closing the listener; connections already handed over are left alone).
func (d *Door) Run(ctx context.Context) {
	if d.cfg.VIP != "" && d.cfg.Mode != ModeSingleAddress {
		d.dropVIP() // a crashed predecessor may have left it
	}
	t := time.NewTicker(d.cfg.Poll)
	defer t.Stop()
	for {
		d.tick()
		select {
		case <-ctx.Done():
			if d.probing != nil {
				d.probing()
			}
			d.release("stopping")
			d.mu.Lock()
			for c := range d.relays {
				_ = c.Close()
			}
			d.mu.Unlock()
			d.wg.Wait()
			return
		case <-t.C:
		}
	}
}

func (d *Door) tick() {
	holder, how := d.cl.Dispatcher()
	self := holder == d.cl.NodeID()
	d.mu.Lock()
	if holder != d.holder {
		d.log.Info("dispatcher role", "holder", holder, "how", how)
	}
	d.holder, d.how = holder, how
	active := d.active
	d.mu.Unlock()
	switch {
	case self && d.probing == nil && d.cfg.ProbeInterval > 0:
		ctx, cancel := context.WithCancel(context.Background())
		d.probing = cancel
		d.wg.Go(func() { d.probe.run(ctx, d.probeTargets) })
	case !self && d.probing != nil:
		d.probing()
		d.probing = nil
	}
	if self {
		// Only the holder's scheduler places connections: the others do
		// not walk the membership every Poll.
		d.feed()
	}
	d.followPolicy()
	switch {
	case self && active:
		if d.cfg.Mode != ModeSingleAddress {
			d.refreshVIP()
		}
	case self && !active:
		d.acquire()
	case !self && active:
		d.release("the role moved to " + holder)
	}
}

// feed passes the members' gossiped figures to the scheduler, only when
// they changed (a report resets the count of assignments since the last).
func (d *Door) feed() {
	members := d.cl.Members()
	present := make(map[string]bool, len(members))
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range members {
		present[m.ID] = true
		n := dispatch.NodeLoad{ID: m.ID, Addr: m.HTTPAddr,
			// A suspect node (missed probes) gets no new connection: it is
			// likely dead, and if not it is back within a probe or two.
			Alive: m.Gossip == cluster.GossipAlive && m.HTTPAddr != "" &&
				(m.State == "" || m.State == meta.NodeActive) && !d.probe.isDown(m.ID)}
		if l := m.Load; l != nil {
			n.Connections, n.CPU, n.Load, n.FreeMemory, n.At = l.Connections, l.CPU, l.RunQueue, l.FreeMemory, l.Time()
		}
		if old, ok := d.seen[m.ID]; ok && old.At.Equal(n.At) && old.Alive == n.Alive && old.Addr == n.Addr {
			continue
		}
		d.seen[m.ID] = n
		d.sched.Report(n)
	}
	for id := range d.seen {
		if !present[id] {
			delete(d.seen, id)
			d.sched.Remove(id)
		}
	}
}

// followPolicy applies the cluster-wide policy setting, or goes back to
// the node's own when it is cleared.
func (d *Door) followPolicy() {
	want := d.cfg.Policy
	if d.cfg.PolicyOverride != nil {
		if o := d.cfg.PolicyOverride(); o != "" {
			want = o
		}
	}
	if want == d.sched.PolicyName() {
		return
	}
	p, err := dispatch.NewPolicy(want, nil)
	if err != nil {
		d.log.Warn("front door: unknown policy in the cluster's settings; keeping the current one", "policy", want)
		return
	}
	d.sched.SetPolicy(p)
	d.log.Info("front door policy", "policy", want)
}

// acquire takes the role: the virtual IP, then the listener (in
// single-address mode: the SYN master's tap, through OnRole).
func (d *Door) acquire() {
	if d.cfg.Mode == ModeSingleAddress {
		d.mu.Lock()
		d.active, d.since, d.bindErr = true, time.Now(), ""
		d.mu.Unlock()
		d.stats.takeovers.Add(1)
		if d.cfg.OnRole != nil {
			d.cfg.OnRole(true)
		}
		d.log.Info("SYN master", "addr", d.cfg.Addr, "policy", d.sched.PolicyName())
		return
	}
	if d.cfg.VIP != "" {
		if err := d.addVIP(); err != nil {
			d.noteBindErr(err)
			return
		}
	}
	// No TCP keep-alive probes: the front door's connections are bounded
	// by its timeouts and limits, and the setsockopt calls cost.
	lc := net.ListenConfig{KeepAlive: -1}
	raw, err := lc.Listen(context.Background(), "tcp", d.cfg.Addr)
	if err != nil {
		// The previous holder may still hold the address (on one machine,
		// or a paused process): try again at the next tick.
		d.noteBindErr(err)
		return
	}
	ln := newLimitListener(raw, d.cfg.MaxConns, d.cfg.MaxConnsPerClient, d.stats.reject)
	d.mu.Lock()
	d.active, d.since, d.ln, d.bindErr = true, time.Now(), ln, ""
	d.mu.Unlock()
	d.stats.takeovers.Add(1)
	d.log.Info("front door open", "addr", raw.Addr().String(), "mode", d.cfg.Mode, "policy", d.sched.PolicyName())
	if d.cfg.VIP != "" {
		d.wg.Go(d.announceVIP)
	}
	if d.cfg.Mode == ModeProxy {
		d.wg.Go(func() { d.serveProxy(ln) })
		return
	}
	srv := d.redirectServer()
	d.mu.Lock()
	d.srv = srv
	d.mu.Unlock()
	d.wg.Go(func() { _ = srv.Serve(ln) })
}

func (d *Door) noteBindErr(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bindErr != err.Error() {
		d.log.Warn("cannot open the front door yet; retrying", "addr", d.cfg.Addr, "err", err)
	}
	d.bindErr = err.Error()
}

// release gives the role up: no new connection is accepted here; those
// already handed over are not touched (redirect: they are not ours; proxy:
// the relays run until either side closes).
func (d *Door) release(why string) {
	d.mu.Lock()
	if !d.active {
		d.mu.Unlock()
		return
	}
	d.active = false
	ln, srv := d.ln, d.srv
	d.ln, d.srv = nil, nil
	d.mu.Unlock()
	d.log.Info("front door closed", "why", why)
	if d.cfg.Mode == ModeSingleAddress {
		if d.cfg.OnRole != nil {
			d.cfg.OnRole(false)
		}
		return
	}
	_ = ln.Close()
	if srv != nil {
		// Idle kept-alive connections close now; a request being answered
		// finishes (a redirect is quick).
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), d.cfg.HeaderTimeout)
			defer cancel()
			_ = srv.Shutdown(ctx)
		}()
	}
	if d.cfg.VIP != "" {
		d.dropVIP()
	}
}

// probeTargets lists the nodes' client ports for the prober.
func (d *Door) probeTargets() map[string]string {
	t := map[string]string{}
	for _, m := range d.cl.Members() {
		if m.HTTPAddr != "" && m.Gossip != cluster.GossipDead {
			t[m.ID] = m.HTTPAddr
		}
	}
	return t
}

// Down reports whether node id should get no new connection: the holder's
// probes found its client port dead, or gossip no longer sees it alive.
func (d *Door) Down(id string) bool { return d.probe.isDown(id) || !d.cl.Alive(id) }

// Policy names the scheduling policy in force.
func (d *Door) Policy() string { return d.sched.PolicyName() }

// Choose places a new connection by the policy (single-address mode: a
// client SYN the master tapped); it counts as a decision.
func (d *Door) Choose(client netip.AddrPort) (string, bool) {
	n, ok := d.choose(dispatch.Conn{Client: client})
	return n.ID, ok
}

// choose asks the scheduler. A node the prober has just found down may not
// have reached the scheduler yet (it is fed every Poll): then the figures
// are fed at once and the scheduler asked again.
func (d *Door) choose(c dispatch.Conn) (dispatch.NodeLoad, bool) {
	n, ok := d.sched.Choose(c)
	if ok && d.probe.isDown(n.ID) {
		d.feed()
		n, ok = d.sched.Choose(c)
	}
	return n, ok
}

// Addr returns the address the front door listens on while active ("").
func (d *Door) Addr() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ln == nil {
		return ""
	}
	return d.ln.Addr().String()
}

// stats are the front door's counters.
type stats struct {
	takeovers, accepted, proxied, local, broken, dialFailed atomic.Int64
	mu                                                      sync.Mutex
	rejected                                                map[string]int64
}

func (s *stats) init() { s.rejected = map[string]int64{} }

func (s *stats) reject(reason string) {
	s.mu.Lock()
	s.rejected[reason]++
	s.mu.Unlock()
}
