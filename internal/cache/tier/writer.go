package tier

import "sync"

// job is one object waiting to be written to the disk tier.
type job struct {
	e *entry
	o *Object
}

// writer is the disk tier's write queue: Put hands it objects and returns
// at once; one goroutine writes them in order (so that a later store of
// an object lands after an earlier one). The queue is bounded in bytes:
// when it is full the object stays in memory only, so that a slow disk
// never holds a request.
type writer struct {
	mu      sync.Mutex
	cond    *sync.Cond // a job queued, one done, or closed
	jobs    []job
	bytes   int64
	max     int64
	pending int // queued and being written
	closed  bool
	done    chan struct{}
}

func newWriter(max int64) *writer {
	w := &writer{max: max, done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// push queues a job; false when the queue is full or closed. A job
// larger than the whole bound is taken only into an empty queue.
func (w *writer) push(j job) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := int64(len(j.o.Body))
	if w.closed || (w.bytes > 0 && w.bytes+n > w.max) {
		return false
	}
	w.jobs = append(w.jobs, j)
	w.bytes += n
	w.pending++
	w.cond.Broadcast()
	return true
}

// run writes the jobs in order until the writer is closed and drained.
func (w *writer) run(write func(job)) {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.jobs) == 0 && !w.closed {
			w.cond.Wait()
		}
		if len(w.jobs) == 0 {
			w.mu.Unlock()
			return
		}
		j := w.jobs[0]
		w.jobs[0] = job{}
		w.jobs = w.jobs[1:]
		w.mu.Unlock()

		write(j)

		w.mu.Lock()
		w.bytes -= int64(len(j.o.Body))
		w.pending--
		w.cond.Broadcast()
		w.mu.Unlock()
	}
}

// flush waits until every job queued so far has been written.
func (w *writer) flush() {
	w.mu.Lock()
	for w.pending > 0 {
		w.cond.Wait()
	}
	w.mu.Unlock()
}

// queued is the jobs waiting or being written, and their bytes.
func (w *writer) queued() (int, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending, w.bytes
}

// close refuses new jobs and waits for the queued ones to be written.
func (w *writer) close() {
	w.mu.Lock()
	w.closed = true
	w.cond.Broadcast()
	w.mu.Unlock()
	<-w.done
}
