package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/sessions/holder"
)

// Cluster is what the manager needs of the node's cluster seat
// (*cluster.Cluster has it).
type Cluster interface {
	NodeID() string
	ApplyOp(ctx context.Context, op meta.Op) (*meta.Result, error)
	FSM() *meta.FSM
	Alive(id string) bool
	IsLeader() bool
}

// Config is a node's sessions service.
type Config struct {
	// Dir holds one directory per local session (DATA/sessions).
	Dir string
	// Kinds are the kinds offered; "shell" (a login shell) is added when
	// no kind has that name.
	Kinds []Kind
	// AccountPrefix names a user's Unix account: prefix + user name
	// (default DefaultAccountPrefix).
	AccountPrefix string
	// HolderCommand starts a holder; the session's directory is appended
	// (default: this executable, "session-holder").
	HolderCommand []string
	// Scrollback is how many lines leaving the screen a session keeps
	// (default 1000).
	Scrollback int
	// LostAfter is how long a node must be dead before its sessions are
	// marked lost or restarted elsewhere (default 5 s).
	LostAfter time.Duration
	// Placer picks the node of a new session (when the client names none)
	// and of a restart elsewhere (default: First).
	Placer Placer
	// MaxPerNode is the most sessions a node runs (0: no limit): a
	// placement skips a node that has them, and a session asked of it
	// by name is refused.
	MaxPerNode int
	// MaxPerUser is the most sessions a user runs (0: no limit).
	MaxPerUser int
	// Cgroups sets limits; nil: none are set (see limits.go).
	Cgroups *Cgroups
	// NodeURL returns this node's client API as a session's programs
	// reach it (MURE_NODE in their environment, for mure run); nil or "":
	// not given. A function: the API opens after the sessions start.
	NodeURL func() string
	// NodeCA returns the PEM of the CA that the node's client API
	// certificate chains to (MURE_CA in a session's environment, so that
	// mure there verifies the node over TLS); "" or nil: not given (no
	// TLS, or a CA the system trusts).
	NodeCA func() string
	Logger *slog.Logger
}

// Manager runs a node's local sessions and keeps their records.
type Manager struct {
	cfg   Config
	cl    Cluster
	log   *slog.Logger
	kinds map[string]Kind
	bal   *balancer

	mu        sync.Mutex
	local     map[string]*local
	starting  map[string]bool      // sessions Start is starting here
	deadSince map[string]time.Time // node → first seen dead (leader)
	opened    time.Time

	stop chan struct{}
	done chan struct{}
}

// local is one session whose holder runs on this node.
type local struct {
	id, dir      string
	kind         Kind
	status       holder.Status
	warned       bool
	missingSince time.Time
}

// NewManager checks cfg and returns a manager; Open starts it.
func NewManager(cfg Config, cl Cluster) (*Manager, error) {
	if cfg.AccountPrefix == "" {
		cfg.AccountPrefix = DefaultAccountPrefix
	}
	if cfg.Scrollback == 0 {
		cfg.Scrollback = 1000
	}
	if cfg.LostAfter == 0 {
		cfg.LostAfter = 5 * time.Second
	}
	if cfg.Placer == nil {
		cfg.Placer = First{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.HolderCommand) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sessions: find this executable for the holder: %w", err)
		}
		cfg.HolderCommand = []string{exe, "session-holder"}
	}
	m := &Manager{cfg: cfg, cl: cl, log: cfg.Logger, kinds: map[string]Kind{}, bal: newBalancer(nil), local: map[string]*local{}, starting: map[string]bool{},
		deadSince: map[string]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, k := range cfg.Kinds {
		if err := k.Validate(); err != nil {
			return nil, err
		}
		if _, dup := m.kinds[k.Name]; dup {
			return nil, fmt.Errorf("session kind %s is declared twice", k.Name)
		}
		m.kinds[k.Name] = k
	}
	if _, ok := m.kinds[DefaultKind.Name]; !ok {
		m.kinds[DefaultKind.Name] = DefaultKind
	}
	if cg := cfg.Cgroups; cg != nil && cg.Escaped != "" {
		m.log.Warn("sessions' limits are set, but not all under this node's own cgroup", "why", cg.Escaped)
	}
	return m, nil
}

// Open adopts the holders still running from before (the node restarted)
// and starts the manager's loop.
func (m *Manager) Open(ctx context.Context) error {
	if err := os.MkdirAll(m.cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	ents, err := os.ReadDir(m.cfg.Dir)
	if err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(m.cfg.Dir, e.Name())
		l := &local{id: e.Name(), dir: dir}
		if spec, err := readKind(dir); err == nil {
			l.kind = spec
		}
		m.local[l.id] = l
		m.log.Info("adopting a session from before", "session", l.id)
	}
	m.opened = time.Now()
	go m.loop()
	return nil
}

// Close stops the loop. The holders run on: the next start adopts them.
func (m *Manager) Close() {
	close(m.stop)
	<-m.done
}

// Kinds returns the kinds offered.
func (m *Manager) Kinds() []Kind {
	out := make([]Kind, 0, len(m.kinds))
	for _, k := range m.kinds {
		out = append(out, k)
	}
	return out
}

// Kind returns a kind by name.
func (m *Manager) Kind(name string) (Kind, bool) {
	k, ok := m.kinds[name]
	return k, ok
}

// NodeID is this node's ID.
func (m *Manager) NodeID() string { return m.cl.NodeID() }

// Records returns every session record.
func (m *Manager) Records() []Session { return Read(m.cl.FSM()) }

// Record returns one session record.
func (m *Manager) Record(id string) (Session, bool) { return Lookup(m.cl.FSM(), id) }

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// validID reports whether id has newID's form.
func validID(id string) bool {
	b, err := hex.DecodeString(id)
	return err == nil && len(b) == 8 && hex.EncodeToString(b) == id
}

// apply proposes op and returns the part's refusal as an error.
func (m *Manager) apply(ctx context.Context, o meta.Op) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := m.cl.ApplyOp(ctx, o)
	if err != nil {
		return err
	}
	return res.Err
}

// Origin is where a new session comes from: why it was placed here, the
// session it was started from, and the command asked for.
type Origin struct {
	// ID is the session's ID, when the decider chose it (Decision.ID);
	// "": a new one.
	ID        string
	Placement *Placement
	// Parent is the user's session this one belongs to ("": none).
	Parent string
	// Command is the program to run instead of the kind's (mure run --
	// CMD); only a kind that RunsAsked takes one.
	Command []string
}

// RunKind is the kind of a session asked for by mure run without one:
// RunKindName when this node offers it, else the default.
func (m *Manager) RunKind() string {
	if _, ok := m.kinds[RunKindName]; ok {
		return RunKindName
	}
	return DefaultKind.Name
}

// Start starts a new session of kind for user on this node, records it,
// and returns its record.
func (m *Manager) Start(ctx context.Context, user, kind string, size holder.Size, o Origin) (Session, error) {
	if user == "" {
		return Session{}, ErrNoUser
	}
	if kind == "" {
		kind = DefaultKind.Name
	}
	k, ok := m.kinds[kind]
	if !ok {
		return Session{}, fmt.Errorf("%w %q on node %s", ErrUnknownKind, kind, m.cl.NodeID())
	}
	id := o.ID
	if id == "" {
		id = newID()
	} else if !validID(id) {
		return Session{}, fmt.Errorf("%w: session ID %q is not 16 hexadecimal digits", ErrBadRequest, id)
	}
	s := Session{ID: id, User: user, Kind: k.Name, Node: m.cl.NodeID(), State: StateStarting, Created: time.Now().UTC().Truncate(time.Second),
		Placement: o.Placement, Parent: o.Parent, Command: o.Command}
	if len(o.Command) > 0 && !k.RunsAsked() {
		return Session{}, fmt.Errorf("%w: kind %s runs its own command; a command (mure run -- CMD) needs a kind of type shell without one, like %s", ErrBadRequest, k.Name, m.RunKind())
	}
	if o.Parent != "" {
		if p, ok := m.Record(o.Parent); !ok || p.User != user {
			return Session{}, fmt.Errorf("%w: parent %s (yours are listed by mure session ls)", ErrNotFound, o.Parent)
		}
	}
	// The record, and with it the credential, is written before the
	// program starts: a program may use its credential at its first
	// instant. Until the holder runs the record says starting, and the
	// loop leaves it to this call.
	token, hash := NewCredential(s.ID)
	s.CredentialHash = hash
	m.setStarting(s.ID, true)
	defer m.setStarting(s.ID, false)
	if err := m.apply(ctx, AddOp(s)); err != nil {
		return Session{}, fmt.Errorf("record session: %w", err)
	}
	if err := m.spawn(ctx, s, k, size, token); err != nil {
		m.unrecord(ctx, s.ID)
		return Session{}, err
	}
	s.State = StateRunning
	if err := m.apply(ctx, SetOp(Move{ID: s.ID, Node: s.Node, State: StateRunning})); err != nil {
		// The holder runs: the loop's next look at it sets the state.
		m.log.Warn("a started session is still recorded as starting", "session", s.ID, "err", err)
	}
	m.log.Info("session started", "session", s.ID, "user", user, "kind", k.Name)
	return s, nil
}

// setStarting marks session id as being started by Start here (the
// loop leaves its starting record alone), or no longer.
func (m *Manager) setStarting(id string, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if on {
		m.starting[id] = true
	} else {
		delete(m.starting, id)
	}
}

func (m *Manager) isStarting(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.starting[id]
}

// unrecord removes the record of a session that did not start, even when
// the request that asked for it was cancelled; if it cannot, the loop
// removes it later (tick: a first start's record with no holder).
func (m *Manager) unrecord(ctx context.Context, id string) {
	if err := m.apply(context.WithoutCancel(ctx), DeleteOp(id)); err != nil && !isNotFound(err) {
		m.log.Warn("could not remove the record of a session that did not start", "session", id, "err", err)
	}
}

// spawn starts the holder of session s here, giving its program the
// credential token.
func (m *Manager) spawn(ctx context.Context, s Session, k Kind, size holder.Size, token string) error {
	if err := CanSwitch(); err != nil {
		return err
	}
	acct, err := lookupAccount(m.cfg.AccountPrefix, s.User)
	if err != nil {
		return err
	}
	dir := filepath.Join(m.cfg.Dir, s.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	spec, err := m.spec(s, k, acct, size, dir)
	if err == nil {
		err = writeKind(dir, k)
	}
	if err == nil {
		err = holder.WriteSpec(dir, spec)
	}
	if err == nil {
		err = holder.Spawn(ctx, m.cfg.HolderCommand, dir, CredentialEnv+"="+token)
	}
	if err != nil {
		m.cfg.Cgroups.remove(s.ID)
		os.RemoveAll(dir)
		return err
	}
	m.mu.Lock()
	m.local[s.ID] = &local{id: s.ID, dir: dir, kind: k}
	m.mu.Unlock()
	return nil
}

// spec is what the holder runs for session s.
func (m *Manager) spec(s Session, k Kind, a Account, size holder.Size, dir string) (holder.Spec, error) {
	argv := k.Command
	switch {
	case len(s.Command) > 0:
		// Through the login shell, for the account's PATH; "$@" keeps
		// the words as they were asked.
		argv = append([]string{a.Shell, "-l", "-c", `exec "$@"`, "mure-run"}, s.Command...)
	case len(argv) == 0:
		argv = []string{a.Shell, "-l"}
	}
	env := []string{"HOME=" + a.Home, "USER=" + a.Name, "LOGNAME=" + a.Name, "SHELL=" + a.Shell,
		"PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm-256color", "LANG=C.UTF-8", "MURE_SESSION=" + s.ID, "MURE_USER=" + s.User}
	if m.cfg.NodeURL != nil {
		if u := m.cfg.NodeURL(); u != "" {
			env = append(env, "MURE_NODE="+u)
		}
	}
	if m.cfg.NodeCA != nil {
		if ca := m.cfg.NodeCA(); ca != "" {
			env = append(env, "MURE_CA="+ca)
		}
	}
	if k.Type == TypeWeb {
		w, err := newWebApp(dir, s.ID)
		if err != nil {
			return holder.Spec{}, err
		}
		env = append(env, w.env()...)
	}
	home := a.Home
	if st, err := os.Stat(home); err != nil || !st.IsDir() {
		home = "/"
	}
	cgs, err := m.cfg.Cgroups.create(s.ID, k.Limits)
	if err != nil {
		return holder.Spec{}, err
	}
	return holder.Spec{ID: s.ID, Argv: argv, Env: env, Dir: home, UID: a.UID, GID: a.GID, Groups: a.Groups,
		Size: size, Scrollback: m.cfg.Scrollback, Cgroups: cgs}, nil
}

// Dir returns the directory of a session running here.
func (m *Manager) Dir(id string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.local[id]
	if !ok {
		return "", false
	}
	return l.dir, true
}

// Attach connects a terminal client to a session running here.
func (m *Manager) Attach(ctx context.Context, id string, size holder.Size) (*holder.Conn, error) {
	dir, ok := m.Dir(id)
	if !ok {
		return nil, fmt.Errorf("%w: %s does not run on node %s", ErrNotFound, id, m.cl.NodeID())
	}
	return holder.Attach(ctx, dir, size)
}

// Stats returns the latest status of each session running here.
func (m *Manager) Stats() map[string]holder.Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]holder.Status, len(m.local))
	for id, l := range m.local {
		out[id] = l.status
	}
	return out
}

// Kill ends a session: here if it runs here; a lost one's record is
// removed wherever it is asked.
func (m *Manager) Kill(ctx context.Context, id, why string) error {
	if dir, ok := m.Dir(id); ok {
		m.killLocal(id, why)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if _, ok := holder.ReadExit(dir); ok {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		m.ended(ctx, id)
		return nil
	}
	rec, ok := m.Record(id)
	if !ok {
		return ErrNotFound
	}
	if rec.State != StateLost && rec.Node != m.cl.NodeID() && m.cl.Alive(rec.Node) {
		return fmt.Errorf("session %s runs on node %s: ask that node", id, rec.Node)
	}
	return m.apply(ctx, DeleteOp(id))
}

func (m *Manager) killLocal(id, why string) {
	dir, ok := m.Dir(id)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := holder.Control(ctx, dir)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.Kill(why)
	_, _ = c.Status(ctx) // the kill was read before this answer
}

// ended forgets a session whose holder is gone: its directory and, if it
// ran here, its record.
func (m *Manager) ended(ctx context.Context, id string) {
	m.mu.Lock()
	l := m.local[id]
	delete(m.local, id)
	m.mu.Unlock()
	if l != nil {
		os.RemoveAll(l.dir)
	}
	m.cfg.Cgroups.remove(id)
	if rec, ok := m.Record(id); ok && rec.Node == m.cl.NodeID() {
		if err := m.apply(ctx, DeleteOp(id)); err != nil && !isNotFound(err) {
			m.log.Warn("could not remove an ended session's record", "session", id, "err", err)
		}
	}
}
