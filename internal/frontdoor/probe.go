package frontdoor

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// probeMisses is how many dials in a row that time out make a node down
// (a refused dial makes it down at once).
const probeMisses = 3

// prober dials every node's client port each interval while this node
// holds the role. A node whose port refuses the dial is down at once: its
// process died, and its kernel answered with a reset. A node that does not
// answer within the timeout is down after probeMisses tries in a row (its
// host is gone). Its first answered dial brings it back. Gossip finds the
// same deaths, but after its own probes and suspicion (a second or more);
// until then the policy would keep sending new connections to a dead node.
// A node whose process is paused still completes handshakes in its
// kernel: that is gossip's to find.
type prober struct {
	interval, timeout time.Duration
	log               *slog.Logger

	mu   sync.Mutex
	down map[string]bool
	miss map[string]int
}

func newProber(interval time.Duration, log *slog.Logger) *prober {
	return &prober{interval: interval, timeout: max(interval*5, 200*time.Millisecond), log: log,
		down: map[string]bool{}, miss: map[string]int{}}
}

// run probes targets (node ID → client address) every interval until ctx
// ends, then forgets what it found.
func (p *prober) run(ctx context.Context, targets func() map[string]string) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		p.round(ctx, targets())
		select {
		case <-ctx.Done():
			p.mu.Lock()
			clear(p.down)
			clear(p.miss)
			p.mu.Unlock()
			return
		case <-t.C:
		}
	}
}

func (p *prober) round(ctx context.Context, targets map[string]string) {
	var wg sync.WaitGroup
	for id, addr := range targets {
		wg.Go(func() { p.check(ctx, id, addr) })
	}
	wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for id := range p.miss {
		if _, ok := targets[id]; !ok {
			delete(p.miss, id)
			delete(p.down, id)
		}
	}
}

func (p *prober) check(ctx context.Context, id, addr string) {
	c, err := (&net.Dialer{Timeout: p.timeout}).DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
	}
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil:
		if p.down[id] {
			p.log.Info("front door: node answers again", "node", id, "addr", addr)
		}
		delete(p.down, id)
		p.miss[id] = 0
	case errors.Is(err, syscall.ECONNREFUSED):
		p.markDown(id, addr, err)
	default:
		if p.miss[id]++; p.miss[id] >= probeMisses {
			p.markDown(id, addr, err)
		}
	}
}

func (p *prober) markDown(id, addr string, err error) {
	if !p.down[id] {
		p.log.Warn("front door: node does not answer on its client port; no new connections for it", "node", id, "addr", addr, "err", err)
	}
	p.down[id] = true
}

// isDown reports whether the last probes found node id down.
func (p *prober) isDown(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.down[id]
}
