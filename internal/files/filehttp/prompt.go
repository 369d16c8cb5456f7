package filehttp

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A prompt listener: a listener whose accept loop the running goroutines
// wake, not only the network poller (docs/decisions/0067-prompt-accepts.md).
//
// Past capacity, Go's scheduler runs a goroutine the network poller woke
// only after the goroutines queued before it: on a node held to 0.2 core
// by its cgroup, bursts of hundreds of client connections whose requests
// came in, 100–500 ms. A new connection (a dashboard's, a scraper's, a
// client's first) waited that long for its accept loop, then again for
// each goroutine it passed through. A goroutine readied by a running one
// (a channel send, a deadline that has passed) runs next on that
// processor instead, ahead of the queue. So the goroutines that run all
// the time while the node is busy — the front's connections, after each
// request — call Prompt: at most once per PromptInterval it looks whether
// a connection waits in the listen queue (ppoll, no accept) and, if
// one does, ends the accept loop's wait by putting the listener's
// deadline in the past. The accept loop runs as soon as the goroutine
// that looked parks, accepts, clears the deadline, and starts the new
// connection's goroutine, which runs next the same way.

// PromptInterval is how often at most Prompt looks at the listen queue:
// while the node is busy, a new connection waits about this long for its
// accept (when it is not, the poller wakes the accept loop at once).
const PromptInterval = time.Millisecond

// PromptListener is a TCP listener whose Accept a running goroutine can
// hurry (Prompt).
type PromptListener struct {
	*net.TCPListener
	rc    syscall.RawConn
	start time.Time    // the clock's origin: monotonic, so that a step of the wall clock back does not stop Prompt
	next  atomic.Int64 // when Prompt may look again (ns since start)

	mu     sync.Mutex
	kicked bool // the deadline is in the past, set by Prompt
	kicks  atomic.Uint64
}

// NewPromptListener wraps ln.
func NewPromptListener(ln *net.TCPListener) (*PromptListener, error) {
	rc, err := ln.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("prompt listener %s: %w", ln.Addr(), err)
	}
	return &PromptListener{TCPListener: ln, rc: rc, start: time.Now()}, nil
}

// Accept returns the next connection; a prompt ends its wait early.
func (l *PromptListener) Accept() (net.Conn, error) {
	for {
		c, err := l.TCPListener.Accept()
		if err == nil || !isTimeout(err) || !l.unkick() {
			return c, err
		}
	}
}

// unkick clears the deadline a prompt set; false when no prompt set it.
func (l *PromptListener) unkick() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.kicked {
		return false
	}
	l.kicked = false
	return l.TCPListener.SetDeadline(time.Time{}) == nil
}

// Prompt wakes the accept loop when a connection waits to be accepted,
// at most once per PromptInterval; now is the caller's time.Now. Cheap
// when it does nothing (an atomic load); the look is one raw ppoll.
func (l *PromptListener) Prompt(now time.Time) {
	t := int64(now.Sub(l.start))
	next := l.next.Load()
	if t < next || !l.next.CompareAndSwap(next, t+int64(PromptInterval)) {
		return
	}
	if !l.waiting() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kicked {
		return // the accept loop has not run since the last prompt
	}
	// A deadline in the past readies the goroutine waiting in Accept on
	// this processor, to run next (the runtime's netpollgoready).
	if l.TCPListener.SetDeadline(time.Unix(1, 0)) == nil {
		l.kicked = true
		l.kicks.Add(1)
	}
}

// Prompts returns how many times Prompt woke the accept loop.
func (l *PromptListener) Prompts() uint64 { return l.kicks.Load() }

// waiting says whether a connection waits in the listen queue.
func (l *PromptListener) waiting() bool {
	ready := false
	_ = l.rc.Control(func(fd uintptr) { ready = pollIn(fd) })
	return ready
}
