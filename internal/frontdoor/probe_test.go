package frontdoor

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"
)

// TestProber: a node whose port stops listening is down at the next round
// (the dial is refused), and up again once it listens.
func TestProber(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	go acceptAndClose(ln)
	p := newProber(10*time.Millisecond, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.run(ctx, func() map[string]string { return map[string]string{"n1": addr} }); close(done) }()
	defer func() { cancel(); <-done }()
	poll := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); !cond(); {
			if time.Now().After(end) {
				t.Fatalf("%s: not within 5 s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// up: several rounds pass without it going down
	poll("three rounds", func() bool { p.mu.Lock(); defer p.mu.Unlock(); _, seen := p.miss["n1"]; return seen })
	if p.isDown("n1") {
		t.Fatal("a listening node is down")
	}
	ln.Close()
	poll("the closed port found down", func() bool { return p.isDown("n1") })
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	defer ln2.Close()
	go acceptAndClose(ln2)
	poll("the port found up again", func() bool { return !p.isDown("n1") })
}

// acceptAndClose answers every connection on ln by closing it, until ln is
// closed.
func acceptAndClose(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}
