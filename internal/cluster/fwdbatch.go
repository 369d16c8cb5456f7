package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// A follower's proposals go to the leader in batches (issue 16, item 2):
// while one request to the leader is in flight, the proposals made
// meanwhile queue, and the next request carries them all (up to
// maxForwardBatch) to POST /peer/cluster/apply-batch. The leader proposes
// each as the single-proposal routes do, concurrently, and answers each
// with its own result or refusal, so what a proposer is told is what a
// request of its own would have told it. A lone proposal takes the
// single route; a leader without the batch route (an older binary: 404)
// gets the batch one by one.

// maxForwardBatch bounds the proposals in one request to the leader;
// maxForwardInflight the requests in flight at once (so that a batch
// waiting on a slow barrier does not hold up every other proposal).
const (
	maxForwardBatch    = 256
	maxForwardInflight = 4
)

// forwarder is a follower's queue of proposals for the leader.
type forwarder struct {
	c       *Cluster
	mu      sync.Mutex
	queue   []*forwardItem
	senders int             // goroutines sending the queue
	single  map[string]bool // leaders that answered 404 to a batch

	queued, batches, batched int    // proposals; requests carrying several, and those proposals
	gate                     func() // tests: called before each request
}

type forwardItem struct {
	ctx  context.Context
	addr string
	p    proposal
	done chan struct{}
	res  *meta.Result
	err  error
}

// batchItem is one proposal of a batch on the wire; batchAnswer its
// answer: a result, or the refusal a single request would have got.
type batchItem struct {
	Cmd *meta.Command `json:"cmd,omitempty"`
	Op  *meta.Op      `json:"op,omitempty"`
}

type batchAnswer struct {
	Result *meta.Result `json:"result,omitempty"`
	Status int          `json:"status,omitempty"`
	Code   string       `json:"code,omitempty"`
	Error  string       `json:"error,omitempty"`
}

// forward sends p to the leader at addr, in a batch if others are on
// their way, and returns its result.
func (f *forwarder) forward(ctx context.Context, addr string, p proposal) (*meta.Result, error) {
	it := &forwardItem{ctx: ctx, addr: addr, p: p, done: make(chan struct{})}
	f.mu.Lock()
	f.queue = append(f.queue, it)
	f.queued++
	if f.senders < maxForwardInflight {
		f.senders++
		go f.send()
	}
	f.mu.Unlock()
	select {
	case <-it.done:
		return it.res, it.err
	case <-ctx.Done():
		return nil, ctx.Err() // as a request of its own, cancelled
	}
}

// send empties the queue, one request (single or batch) at a time.
func (f *forwarder) send() {
	for {
		f.mu.Lock()
		batch := f.take()
		if len(batch) == 0 {
			f.senders--
			f.mu.Unlock()
			return
		}
		single := f.single[batch[0].addr]
		if len(batch) > 1 {
			f.batches++
			f.batched += len(batch)
		}
		gate := f.gate
		f.mu.Unlock()
		if gate != nil {
			gate()
		}
		switch {
		case len(batch) == 1:
			f.sendOne(batch[0])
		case single:
			f.sendEach(batch)
		default:
			f.sendBatch(batch)
		}
	}
}

// take removes from the queue the items for the first item's leader
// (up to maxForwardBatch), answering those whose caller gave up. Caller
// holds mu.
func (f *forwarder) take() []*forwardItem {
	var batch, rest []*forwardItem
	for _, it := range f.queue {
		switch {
		case it.ctx.Err() != nil:
			it.err = it.ctx.Err()
			close(it.done)
		case len(batch) < maxForwardBatch && (len(batch) == 0 || it.addr == batch[0].addr):
			batch = append(batch, it)
		default:
			rest = append(rest, it)
		}
	}
	f.queue = rest
	return batch
}

func (f *forwarder) sendOne(it *forwardItem) {
	var res meta.Result
	if it.err = f.c.peerCall(it.ctx, it.addr, it.p.peerPath(), it.p.body(), &res); it.err == nil {
		it.res = res.Unwire()
	}
	close(it.done)
}

func (f *forwarder) sendEach(batch []*forwardItem) {
	var wg sync.WaitGroup
	for _, it := range batch {
		wg.Add(1)
		go func() { defer wg.Done(); f.sendOne(it) }()
	}
	wg.Wait()
}

// sendBatch sends batch in one request, bounded by the latest of its
// callers' deadlines and at least 10 s (a caller may have none), and
// hands each caller its answer.
func (f *forwarder) sendBatch(batch []*forwardItem) {
	deadline := time.Now().Add(10 * time.Second)
	items := make([]batchItem, len(batch))
	for i, it := range batch {
		if d, ok := it.ctx.Deadline(); ok && d.After(deadline) {
			deadline = d
		}
		items[i] = batchItem{Cmd: it.p.cmd, Op: it.p.op}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var answers []batchAnswer
	err := f.c.peerCall(ctx, batch[0].addr, "/peer/cluster/apply-batch", items, &answers)
	var pe *PeerError
	if errors.As(err, &pe) && pe.Status == http.StatusNotFound {
		f.mu.Lock()
		if f.single == nil {
			f.single = map[string]bool{}
		}
		f.single[batch[0].addr] = true
		f.mu.Unlock()
		f.sendEach(batch)
		return
	}
	if err == nil && len(answers) != len(batch) {
		err = errors.New("apply-batch: the leader answered " + strconv.Itoa(len(answers)) + " of " + strconv.Itoa(len(batch)))
	}
	for i, it := range batch {
		switch {
		case err != nil:
			it.err = err
		case answers[i].Status != 0:
			it.err = &PeerError{Status: answers[i].Status, Code: answers[i].Code, Msg: answers[i].Error, Addr: it.addr}
		case answers[i].Result == nil:
			it.err = errors.New("apply-batch: an answer without a result")
		default:
			it.res = answers[i].Result.Unwire()
		}
		close(it.done)
	}
}

// handleApplyBatch proposes each proposal of a batch as handleApply and
// handleOp would, concurrently (raft group-commits them), and answers
// them in order.
func (c *Cluster) handleApplyBatch(w http.ResponseWriter, r *http.Request) {
	var items []batchItem
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&items); err != nil {
		peerError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	if len(items) > maxForwardBatch {
		peerError(w, http.StatusBadRequest, "bad_request", "more than "+strconv.Itoa(maxForwardBatch)+" proposals in one batch")
		return
	}
	if !c.IsLeader() {
		peerError(w, http.StatusServiceUnavailable, "no_leader", "not the leader")
		return
	}
	answers := make([]batchAnswer, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		if (it.Cmd == nil) == (it.Op == nil) {
			answers[i] = batchAnswer{Status: http.StatusBadRequest, Code: "bad_request", Error: "a proposal is a cmd or an op"}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.proposeLocal(r.Context(), proposal{cmd: it.Cmd, op: it.Op})
			if err != nil {
				status, code := peerErrStatus(err)
				answers[i] = batchAnswer{Status: status, Code: code, Error: err.Error()}
				return
			}
			answers[i] = batchAnswer{Result: res.Wire()}
		}()
	}
	wg.Wait()
	writeJSON(w, answers)
}
