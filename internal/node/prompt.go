package node

import (
	"net"
	"time"

	"github.com/mure-dev/mure/internal/files/filehttp"
)

// prompted wraps a client-facing TCP listener (the client port, the
// monitoring port) so that the front's busy connections wake its accept
// loop (filehttp.PromptListener; docs/decisions/0067-prompt-accepts.md):
// an overloaded node accepts a dashboard's or a client's new connection
// within about a millisecond instead of after the poller's queue. Other
// listeners pass unchanged.
func (n *Node) prompted(ln net.Listener) net.Listener {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return ln
	}
	p, err := filehttp.NewPromptListener(tl)
	if err != nil {
		n.log.Warn("accepts not prompted", "addr", ln.Addr(), "err", err)
		return ln
	}
	n.prompts = append(n.prompts, p)
	return p
}

// prompt is the front's FrontOptions.Prompt: it prompts every prompted
// listener.
func (n *Node) prompt(now time.Time) {
	for _, p := range n.prompts {
		p.Prompt(now)
	}
}

// promptCount returns how many times the running connections woke an
// accept loop since the start.
func (n *Node) promptCount() uint64 {
	var c uint64
	for _, p := range n.prompts {
		c += p.Prompts()
	}
	return c
}
