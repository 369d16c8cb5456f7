package apps

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// killRetry is how often the reaper looks again for processes of runs
// being stopped: a program may fork between a sweep and its kill.
const killRetry = 250 * time.Millisecond

// reaper kills the processes of CGI runs being stopped. One goroutine
// sweeps the process table for all of them, so a burst of timeouts under
// overload costs one sweep per killRetry, not one per run.
type reaper struct {
	log  *slog.Logger
	mu   sync.Mutex
	runs map[string]*atomic.Int64 // run tag → processes killed
	wake chan struct{}
	quit chan struct{}
	done chan struct{}
}

func startReaper(log *slog.Logger) *reaper {
	rp := &reaper{log: log, runs: map[string]*atomic.Int64{}, wake: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{})}
	go rp.loop()
	return rp
}

// stop has the run's processes killed, now and every killRetry until
// forget; the counter tells how many were.
func (rp *reaper) stop(tag string) *atomic.Int64 {
	rp.mu.Lock()
	c := rp.runs[tag]
	if c == nil {
		c = new(atomic.Int64)
		rp.runs[tag] = c
	}
	rp.mu.Unlock()
	select {
	case rp.wake <- struct{}{}:
	default:
	}
	return c
}

func (rp *reaper) forget(tag string) {
	rp.mu.Lock()
	delete(rp.runs, tag)
	rp.mu.Unlock()
}

// counter returns the run's counter if it is being stopped.
func (rp *reaper) counter(tag string) *atomic.Int64 {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.runs[tag]
}

func (rp *reaper) pending() bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return len(rp.runs) > 0
}

func (rp *reaper) loop() {
	defer close(rp.done)
	t := time.NewTimer(killRetry)
	t.Stop()
	for {
		select {
		case <-rp.quit:
			return
		case <-rp.wake:
		}
		for failed := false; rp.pending(); {
			if err := killMarked(rp.counter); err != nil && !failed {
				failed = true
				rp.log.Error("cannot stop CGI programs", "err", err)
			}
			t.Reset(killRetry)
			select {
			case <-rp.quit:
				return
			case <-t.C:
			case <-rp.wake:
				t.Stop()
			}
		}
	}
}

// close stops the reaper's goroutine and waits for it.
func (rp *reaper) close() {
	close(rp.quit)
	<-rp.done
}
