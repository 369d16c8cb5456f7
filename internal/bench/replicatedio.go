package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/client"
	"github.com/mure-dev/mure/internal/pause"
)

// Defaults of replicated-io: the paper's 20 client machines and sets of 50
// files.
const (
	DefaultIOClients = 20
	DefaultFiles     = 50
)

// readableTimeout bounds the wait for the files of a set to become readable
// after the setup wrote them.
const readableTimeout = 2 * time.Minute

// RunReplicatedIO runs paper 000's experiment. For each set kind (own: C
// sets of F files under <prefix>/c<i>/f<j>; common: one set under
// <prefix>/common/f<j>) and each size, it writes the files, waits until
// every client can read its set (for reads), then for each operation runs
// Reps measured runs in which every client loops over its set, round robin
// from a random start, reading whole files (verifying their length) or
// writing them (a per-client buffer whose first bytes change at each
// write). Client i talks to nodes[i % len(nodes)], following redirects.
// The headline is MB/s: payload bytes over wall time.
func RunReplicatedIO(ctx context.Context, p Params) (*Report, error) {
	p.ioDefaults()
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := oneOf("op", p.Ops, []string{"read", "write"}); err != nil {
		return nil, err
	}
	if err := oneOf("sets", p.Sets, []string{"own", "common"}); err != nil {
		return nil, err
	}
	if p.Files < 1 {
		return nil, fmt.Errorf("files must be at least 1 (got %d)", p.Files)
	}
	if err := oneOf("phase", []string{cmp.Or(p.Phase, "all")}, []string{"all", "setup", "run"}); err != nil {
		return nil, err
	}
	clients := newNodeClients(p.Nodes, p.Token, p.ClientBase, p.Clients)
	defer closeNodeClients(clients)
	rep := newReport("replicated-io", MetricMBPerSec, &p)
	rep.Files = p.Files
	var seq atomic.Uint64                 // write sequence numbers, unique in the scenario
	seq.Store(uint64(p.ClientBase) << 40) // and among the generators of a distributed run
	for _, sets := range p.Sets {
		for _, size := range p.Sizes {
			set := newIOSet(&p, sets, size)
			if p.Phase != "run" {
				if err := set.setup(ctx, &p, clients, &seq); err != nil {
					return nil, err
				}
			}
			if p.Phase == "setup" {
				continue
			}
			if err := pause.Until(ctx, p.StartAt); err != nil {
				return rep, err
			}
			for _, op := range p.Ops {
				g := &Group{Series: op + " " + sets, Op: op, Sets: sets, Size: size}
				for r := range p.Reps {
					name := fmt.Sprintf("%s %s %s rep %d/%d", op, sets, FormatSize(size), r+1, p.Reps)
					res, err := Run(ctx, p.config(name), set.op(op, clients, &seq))
					if err != nil {
						return nil, err
					}
					g.Runs = append(g.Runs, res)
					if ctx.Err() != nil {
						break
					}
				}
				g.summarize()
				rep.Groups = append(rep.Groups, g)
				if ctx.Err() != nil {
					return rep, ctx.Err()
				}
			}
		}
	}
	return rep, nil
}

// ioDefaults fills in replicated-io's defaults.
func (p *Params) ioDefaults() {
	p.Clients = cmp.Or(p.Clients, DefaultIOClients)
	p.Files = cmp.Or(p.Files, DefaultFiles)
	p.Reps = cmp.Or(p.Reps, 1)
	p.Prefix = cmp.Or(p.Prefix, "bench")
	if len(p.Sizes) == 0 {
		p.Sizes = DefaultSizes
	}
	if len(p.Ops) == 0 {
		p.Ops = []string{"read"}
	}
	if len(p.Sets) == 0 {
		p.Sets = []string{"own"}
	}
}

// ioSet is the files of one set kind and size: paths[i] is client i's set
// (the same slice for every client with a common set) and bases[i] the
// content client i writes.
type ioSet struct {
	size   int64
	common bool
	paths  [][]string
	bases  [][]byte
}

func newIOSet(p *Params, sets string, size int64) *ioSet {
	s := &ioSet{size: size, common: sets == "common", paths: make([][]string, p.Clients), bases: make([][]byte, p.Clients)}
	var common []string
	if s.common {
		common = setPaths(p.Prefix+"/common", p.Files)
	}
	for i := range p.Clients {
		g := p.ClientBase + i // the global client index
		s.paths[i] = common
		if common == nil {
			s.paths[i] = setPaths(p.Prefix+"/c"+strconv.Itoa(g), p.Files)
		}
		s.bases[i] = fillRandom(size, uint64(size)<<16|uint64(g))
	}
	return s
}

// setPaths returns dir/f0 .. dir/f<n-1>.
func setPaths(dir string, n int) []string {
	out := make([]string, n)
	for j := range out {
		out[j] = dir + "/f" + strconv.Itoa(j)
	}
	return out
}

// setup writes every file of the set (a common set's file j by client
// j % C, an own set by its client) and then waits until every client reads
// every file of its set at full length.
func (s *ioSet) setup(ctx context.Context, p *Params, clients []*nodeClient, seq *atomic.Uint64) error {
	writers := s.paths
	if s.common {
		// spread the common set's files over the clients
		writers = make([][]string, len(clients))
		for j, path := range s.paths[0] {
			writers[j%len(clients)] = append(writers[j%len(clients)], path)
		}
	}
	p.status("setup: writing %s files", FormatSize(s.size))
	err := forEachClient(ctx, clients, func(ctx context.Context, i int, c *nodeClient) error {
		for _, path := range writers[i] {
			body := newVersionedBody(s.bases[i], seq.Add(1))
			if _, err := c.setup.Put(ctx, path, body, &client.PutOptions{Size: s.size}); err != nil {
				return fmt.Errorf("setup: write %s via %s: %w", path, c.node, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	p.status("setup: waiting until the %s files are readable", FormatSize(s.size))
	ctx, cancel := context.WithTimeout(ctx, readableTimeout)
	defer cancel()
	err = forEachClient(ctx, clients, func(ctx context.Context, i int, c *nodeClient) error {
		for _, path := range s.paths[i] {
			if err := waitReadable(ctx, c, path, s.size); err != nil {
				return fmt.Errorf("setup: %s not readable via %s: %w", path, c.node, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	p.status("setup: waiting until replication of the %s files is done", FormatSize(s.size))
	err = waitQuiet(ctx, clients)
	p.status("")
	return err
}

// quietTimeout bounds the wait for background replication after a setup;
// quietFor is how long every node must stay quiet, longer than the default
// idle resumption delay (1 s) after which the setup's last files start
// replicating.
const (
	quietTimeout = 10 * time.Minute
	quietFor     = 3 * time.Second
)

// waitQuiet polls every node's status until, for quietFor on end, no file
// is pending, under-replicated or waiting to be fetched: a measured run
// must not share the links with the setup's replication. Suspended files
// (their writer holds the right; replication waits for the resumption
// policy) move nothing and do not count.
func waitQuiet(ctx context.Context, clients []*nodeClient) error {
	ctx, cancel := context.WithTimeout(ctx, quietTimeout)
	defer cancel()
	var nodes []*nodeClient
	seen := map[string]bool{}
	for _, c := range clients {
		if !seen[c.node] {
			seen[c.node] = true
			nodes = append(nodes, c)
		}
	}
	var since time.Time // when every node was last seen quiet, all along
	for {
		quiet, why := true, ""
		for _, c := range nodes {
			raw, err := c.setup.Status(ctx)
			var st struct {
				Files   map[string]int    `json:"files"`
				Members []json.RawMessage `json:"members"`
			}
			if err == nil {
				err = json.Unmarshal(raw, &st)
			}
			if err == nil && len(st.Members) == 1 {
				return nil // a single node replicates to nobody
			}
			f := st.Files
			if err != nil || f["pending"]+f["under_replicated"]+f["backlog"] > 0 {
				quiet, why = false, fmt.Sprintf("%s: files %v, error %v", c.node, f, err)
				break
			}
		}
		switch {
		case !quiet:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= quietFor:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("setup: replication not done: %w (%s)", ctx.Err(), why)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitReadable asks for path (HEAD: the same judgment as a read, without
// moving the content again) until its node answers with the full length.
func waitReadable(ctx context.Context, c *nodeClient, path string, size int64) error {
	for {
		fi, err := c.setup.Stat(ctx, path)
		if err == nil && fi.Size != size {
			err = &LengthError{Path: path, Got: fi.Size, Want: size}
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// forEachClient runs f for every client concurrently and returns the first
// error; the first error cancels the others.
func forEachClient(ctx context.Context, clients []*nodeClient, f func(context.Context, int, *nodeClient) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			if err := f(ctx, i, c); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && err != context.Canceled {
		return err
	}
	return ctx.Err()
}

// op returns the request of one client in a measured run. Each client
// starts at a random file of its set.
func (s *ioSet) op(op string, clients []*nodeClient, seq *atomic.Uint64) Op {
	next := make([]atomic.Uint64, len(clients))
	for i := range next {
		next[i].Store(rand.Uint64N(uint64(len(s.paths[i]))))
	}
	path := func(c int) string {
		ps := s.paths[c]
		return ps[(next[c].Add(1)-1)%uint64(len(ps))]
	}
	if op == "write" {
		return func(ctx context.Context, c int) (int64, error) {
			body := newVersionedBody(s.bases[c], seq.Add(1))
			if _, err := clients[c].load.Put(ctx, path(c), body, &client.PutOptions{Size: s.size}); err != nil {
				return 0, err
			}
			return s.size, nil
		}
	}
	return func(ctx context.Context, c int) (int64, error) {
		return readWhole(ctx, clients[c].load, path(c), s.size)
	}
}

// readWhole reads a whole file and checks its length.
func readWhole(ctx context.Context, c *client.Client, path string, size int64) (int64, error) {
	r, err := c.Get(ctx, path, nil)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return n, err
	}
	if n != size {
		return n, &LengthError{Path: path, Got: n, Want: size}
	}
	return n, nil
}
