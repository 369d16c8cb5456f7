package bench

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mure-dev/mure/client"
)

// Defaults of small-ops, as in SeaweedFS's published benchmark (16
// concurrent clients, 1 KiB files; 4 KiB added).
const DefaultSmallClients = 16

// DefaultSmallSizes are the default file sizes of small-ops.
var DefaultSmallSizes = []int64{1 << 10, 4 << 10}

// RunSmallOps measures small-file operations per second. For each size
// and repetition it runs a PUT run, in which every client writes new files
// <prefix>/small/<run>/<size>/r<rep>/c<i>/k<n> back to back, then a GET run,
// in which every client reads, at random, files it wrote in the PUT run.
// The files are left in place.
func RunSmallOps(ctx context.Context, p Params) (*Report, error) {
	p.Clients = cmp.Or(p.Clients, DefaultSmallClients)
	p.Reps = cmp.Or(p.Reps, 1)
	p.Prefix = cmp.Or(p.Prefix, "bench")
	if len(p.Sizes) == 0 {
		p.Sizes = DefaultSmallSizes
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	clients := newNodeClients(p.Nodes, p.Token, p.ClientBase, p.Clients)
	defer closeNodeClients(clients)
	rep := newReport("small-ops", MetricOpsPerSec, &p)
	run := strconv.FormatInt(time.Now().UnixMilli(), 36)
	for _, size := range p.Sizes {
		put := &Group{Series: "PUT", Op: "put", Size: size}
		get := &Group{Series: "GET", Op: "get", Size: size}
		bases := make([][]byte, p.Clients)
		for i := range bases {
			bases[i] = fillRandom(size, uint64(size)<<16|uint64(i))
		}
		for r := range p.Reps {
			dir := fmt.Sprintf("%s/small/%s/%s/r%d", p.Prefix, run, FormatSize(size), r)
			keys := newKeyLog(p.Clients)
			name := fmt.Sprintf("PUT %s rep %d/%d", FormatSize(size), r+1, p.Reps)
			res, err := Run(ctx, p.config(name), keys.putOp(dir, clients, bases, size))
			if err != nil {
				return nil, err
			}
			put.Runs = append(put.Runs, res)
			if ctx.Err() != nil {
				break
			}
			name = fmt.Sprintf("GET %s rep %d/%d", FormatSize(size), r+1, p.Reps)
			if res, err = Run(ctx, p.config(name), keys.getOp(dir, clients, size)); err != nil {
				return nil, err
			}
			get.Runs = append(get.Runs, res)
			if ctx.Err() != nil {
				break
			}
		}
		for _, g := range []*Group{put, get} {
			if len(g.Runs) > 0 {
				g.summarize()
				rep.Groups = append(rep.Groups, g)
			}
		}
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
	}
	return rep, nil
}

// keyLog numbers the files each client writes and remembers those written.
type keyLog struct {
	next    []atomic.Int64
	mu      []sync.Mutex
	written [][]int64
}

func newKeyLog(n int) *keyLog {
	return &keyLog{next: make([]atomic.Int64, n), mu: make([]sync.Mutex, n), written: make([][]int64, n)}
}

func keyPath(dir string, c int, k int64) string {
	return dir + "/c" + strconv.Itoa(c) + "/k" + strconv.FormatInt(k, 10)
}

// putOp writes a new file per request.
func (l *keyLog) putOp(dir string, clients []*nodeClient, bases [][]byte, size int64) Op {
	return func(ctx context.Context, c int) (int64, error) {
		k := l.next[c].Add(1) - 1
		body := newVersionedBody(bases[c], uint64(k))
		if _, err := clients[c].load.Put(ctx, keyPath(dir, c, k), body, &client.PutOptions{Size: size}); err != nil {
			return 0, err
		}
		l.mu[c].Lock()
		l.written[c] = append(l.written[c], k)
		l.mu[c].Unlock()
		return size, nil
	}
}

// getOp reads one of the files the client wrote, at random.
func (l *keyLog) getOp(dir string, clients []*nodeClient, size int64) Op {
	return func(ctx context.Context, c int) (int64, error) {
		l.mu[c].Lock()
		ks := l.written[c]
		l.mu[c].Unlock()
		if len(ks) == 0 {
			return 0, errNoData
		}
		return readWhole(ctx, clients[c].load, keyPath(dir, c, ks[rand.IntN(len(ks))]), size)
	}
}
