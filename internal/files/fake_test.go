package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/meta"
	"github.com/mure-dev/mure/internal/store"
)

// fakeCluster is an in-memory cluster for unit tests of the protocol: one
// log applied at once to every node's state machine (no raft, no
// network), nodes whose liveness and lease the test sets, and a peer seam
// that calls the other node's Service directly, with faults on demand.
type fakeCluster struct {
	t     *testing.T
	mu    sync.Mutex // serialises the log
	idx   uint64
	ids   []string
	fsms  map[string]*meta.FSM
	svcs  map[string]*Service
	dead  map[string]bool // seen dead by gossip; its peer calls fail
	cut   map[string]bool // alive to gossip, but its peer calls fail
	lease map[string]bool // false: no read lease
	// renew: a node listed gets its lease back when it waits for one
	// (AwaitReadLease), as at a renewal; awaited counts those waits.
	renew   map[string]bool
	awaited map[string]int
	// noLeader: a node's next CatchUp calls fail (no leader), that many
	// of them; -1: all.
	noLeader map[string]int

	fmu sync.Mutex
	// fail, when set, decides the fate of a forwarded write to node:
	// before (the call fails, nothing applied) or after (applied, then
	// the connection is lost).
	fail         map[string]string
	forwards     map[string]int // forwarded calls received, by op
	invBatches   []int          // the size of each batch of invalidations received
	fetchBatches []int          // the size of each batch fetch, in order

	// noTake makes the cluster refuse Commit.Take, as one with a voter
	// older than core v2 does; applied lists the commands applied.
	noTake  bool
	applied []meta.Command
	// noV3 refuses a commit with an MD5 or attributes, as a cluster with
	// a voter older than core v3 does.
	noV3 bool
	// noV4 refuses a conditional drop (Drop.Keep), as a cluster with a
	// voter older than core v4 does.
	noV4 bool
	// noV5 refuses Replicas and Releases, as a cluster with a voter older
	// than core v5 does.
	noV5 bool
	// noV6 refuses Settles (core v6).
	noV6 bool
	// lostAnswers makes every Apply lose its first answer: the command is
	// applied, then re-sent and applied again, as cluster.Apply retries,
	// and the second result is returned.
	lostAnswers bool
	// hotReads is what each node gossips of its busiest files (under fmu).
	hotReads map[string][]cluster.HotRead
}

func newFakeCluster(t *testing.T, ids ...string) *fakeCluster {
	c := &fakeCluster{t: t, ids: ids, fsms: map[string]*meta.FSM{}, svcs: map[string]*Service{},
		dead: map[string]bool{}, cut: map[string]bool{}, lease: map[string]bool{},
		renew: map[string]bool{}, awaited: map[string]int{}, noLeader: map[string]int{}, fail: map[string]string{}, forwards: map[string]int{}}
	for _, id := range ids {
		c.fsms[id] = meta.NewFSM()
		c.lease[id] = true
	}
	for _, id := range ids {
		c.apply(meta.Command{Kind: meta.KindNodeUpsert, Info: &meta.Node{ID: id, PeerAddr: id + ":peer", HTTPAddr: id + ":http",
			State: meta.NodeActive, Since: time.Unix(1, 0).UTC()}})
	}
	for _, id := range ids {
		st, err := store.Open(t.TempDir(), store.Options{NoSync: true, CacheBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c.svcs[id] = New(Config{MaxBody: 1 << 10, WriteTimeout: 5 * time.Second, SettleWait: 100 * time.Millisecond,
			LeaseWait: 50 * time.Millisecond},
			&fakeSeat{c: c, id: id}, st, &fakePeers{c: c})
	}
	return c
}

// apply appends cmd to the log and applies it everywhere; a version left
// pending is settled at once (every node applied it already: no node can
// answer for the one before).
func (c *fakeCluster) apply(cmd meta.Command) *meta.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	res := c.applyLocked(cmd)
	if res.File != nil && res.File.Pending && res.Err == nil {
		c.applyLocked(meta.Command{Kind: meta.KindSettle, Path: res.File.Path, Version: res.File.Version})
		res.File = c.fsms[c.ids[0]].File(res.File.Path)
	}
	return res
}

func (c *fakeCluster) applyLocked(cmd meta.Command) *meta.Result {
	if cmd.Time.IsZero() {
		cmd.Time = time.Unix(2, 0).UTC()
	}
	data, err := cmd.Encode()
	if err != nil {
		c.t.Fatal(err)
	}
	c.idx++
	c.applied = append(c.applied, cmd)
	var res *meta.Result
	for _, id := range c.ids {
		res = c.fsms[id].Apply(&raft.Log{Index: c.idx, Type: raft.LogCommand, Data: data}).(*meta.Result)
	}
	return res
}

// fakeSeat is one node's seat in the fake cluster (files.Cluster).
type fakeSeat struct {
	c  *fakeCluster
	id string
}

func (s *fakeSeat) NodeID() string       { return s.id }
func (s *fakeSeat) FSM() *meta.FSM       { return s.c.fsms[s.id] }
func (s *fakeSeat) IsLeader() bool       { return s.id == s.c.ids[0] }
func (s *fakeSeat) LeaseInfo() string    { return "fake" }
func (s *fakeSeat) Alive(id string) bool { return !s.c.dead[id] }
func (s *fakeSeat) Zone() string         { return "" }
func (s *fakeSeat) Locality(string) (string, *cluster.Load) {
	return "", nil
}
func (s *fakeSeat) RTT(string) time.Duration { return 0 }
func (s *fakeSeat) HasReadLease() bool {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return s.c.lease[s.id]
}
func (s *fakeSeat) AwaitReadLease(ctx context.Context) bool {
	s.c.mu.Lock()
	s.c.awaited[s.id]++
	if s.c.renew[s.id] {
		s.c.lease[s.id] = true
	}
	ok := s.c.lease[s.id]
	s.c.mu.Unlock()
	if !ok {
		<-ctx.Done() // no renewal comes: the caller's bound ends the wait
	}
	return ok
}
func (s *fakeSeat) LeaseDeadline(string) (time.Time, bool)          { return time.Time{}, false }
func (s *fakeSeat) WaitInvalidationReady(ctx context.Context) error { return nil }
func (s *fakeSeat) LeasedExcept([]string) []string                  { return nil }
func (s *fakeSeat) SetHotReads(hs []cluster.HotRead) {
	s.c.fmu.Lock()
	defer s.c.fmu.Unlock()
	if s.c.hotReads == nil {
		s.c.hotReads = map[string][]cluster.HotRead{}
	}
	s.c.hotReads[s.id] = hs
}
func (s *fakeSeat) HotReads(id string) []cluster.HotRead {
	s.c.fmu.Lock()
	defer s.c.fmu.Unlock()
	return s.c.hotReads[id]
}
func (s *fakeSeat) CatchUp(ctx context.Context) error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.c.noLeader[s.id] != 0 {
		s.c.noLeader[s.id]--
		return cluster.ErrNoLeader
	}
	return nil
}
func (s *fakeSeat) Apply(ctx context.Context, cmd meta.Command) (*meta.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // as raft's proposal would fail
	}
	if cmd.Take && s.c.noTake || (cmd.MD5 != "" || cmd.Attrs != nil) && s.c.noV3 || cmd.Keep > 0 && s.c.noV4 ||
		(cmd.Kind == meta.KindReplicas || cmd.Kind == meta.KindReleases) && s.c.noV5 || cmd.Kind == meta.KindSettles && s.c.noV6 {
		return nil, fmt.Errorf("fake: %w", meta.ErrUnsupported)
	}
	if s.c.lostAnswers {
		s.c.apply(cmd)
	}
	return s.c.apply(cmd), nil
}

// fakePeers is the peer seam (files.Peers) of the fake cluster.
type fakePeers struct{ c *fakeCluster }

var errRefused = errors.New("fake: connection refused")

// node resolves a peer address, failing for a dead node.
func (p *fakePeers) node(peer, op string) (*Service, error) {
	id := strings.TrimSuffix(peer, ":peer")
	if p.c.dead[id] || p.c.cut[id] {
		return nil, errRefused
	}
	p.c.fmu.Lock()
	if op != "" {
		p.c.forwards[op]++
	}
	p.c.fmu.Unlock()
	return p.c.svcs[id], nil
}

func (p *fakePeers) fate(id string) string {
	p.c.fmu.Lock()
	defer p.c.fmu.Unlock()
	return p.c.fail[id]
}

func (p *fakePeers) Invalidate(ctx context.Context, peer string, invs []Invalidation) error {
	s, err := p.node(peer, "")
	if err != nil {
		return err
	}
	p.c.fmu.Lock()
	p.c.invBatches = append(p.c.invBatches, len(invs))
	p.c.fmu.Unlock()
	for _, inv := range invs {
		s.Invalidated(inv)
	}
	return nil
}

func (p *fakePeers) PushBlob(ctx context.Context, peer string, blob BlobRef, body io.Reader) error {
	s, err := p.node(peer, "")
	if err != nil {
		return err
	}
	return s.StoreBlob(blob, body)
}

func (p *fakePeers) FetchBlob(ctx context.Context, peer string, blob BlobRef) (io.ReadCloser, error) {
	s, err := p.node(peer, "")
	if err != nil {
		return nil, err
	}
	return s.OpenBlob(blob.Path, blob.ID)
}

func (p *fakePeers) FetchBlobs(ctx context.Context, peer string, blobs []BlobRef, each func(i int, body io.Reader) error) error {
	s, err := p.node(peer, "")
	if err != nil {
		return err
	}
	p.c.fmu.Lock()
	p.c.fetchBatches = append(p.c.fetchBatches, len(blobs))
	p.c.fmu.Unlock()
	for i, b := range blobs {
		blob, err := s.OpenBlob(b.Path, b.ID)
		if err != nil {
			continue // not there: skipped, as the peer route does
		}
		err = each(i, blob)
		blob.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *fakePeers) Read(ctx context.Context, peer, path string, o OpenOptions) (Info, io.ReadCloser, error) {
	s, err := p.node(peer, "read")
	if err != nil {
		return Info{}, nil, err
	}
	rd, err := s.Open(ctx, path, o)
	if err != nil {
		return Info{}, nil, err
	}
	return rd.Info(), rd, nil
}

func (p *fakePeers) Put(ctx context.Context, peer, path string, body io.Reader, o PutOptions) (Info, error) {
	s, err := p.node(peer, "write")
	if err != nil {
		return Info{}, err
	}
	switch p.fate(s.self) {
	case "before":
		io.CopyN(io.Discard, body, 1) // the connection broke mid-body
		return Info{}, fmt.Errorf("fake: connection reset: %w", io.ErrUnexpectedEOF)
	case "after":
		if _, err := s.Put(ctx, path, body, o); err != nil {
			return Info{}, err
		}
		return Info{}, fmt.Errorf("fake: connection reset after the write: %w", io.ErrUnexpectedEOF)
	}
	return s.Put(ctx, path, body, o)
}

func (p *fakePeers) Delete(ctx context.Context, peer, path string, o DeleteOptions) error {
	s, err := p.node(peer, "delete")
	if err != nil {
		return err
	}
	return s.Delete(ctx, path, o)
}

// put writes content to path on node id.
func (c *fakeCluster) put(id, path, content string, o PutOptions) (Info, error) {
	if o.Size == 0 {
		o.Size = int64(len(content))
	}
	return c.svcs[id].Put(context.Background(), path, strings.NewReader(content), o)
}

// read reads path on node id.
func (c *fakeCluster) read(id, path string, o OpenOptions) (string, *Reader, error) {
	rd, err := c.svcs[id].Open(context.Background(), path, o)
	if err != nil {
		return "", nil, err
	}
	defer rd.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, rd); err != nil {
		return "", rd, err
	}
	return b.String(), rd, nil
}

func (c *fakeCluster) forwarded(op string) int {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	return c.forwards[op]
}
