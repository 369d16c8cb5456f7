package filehttp

import (
	"errors"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

func listenPrompt(t *testing.T) *PromptListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPromptListener(ln.(*net.TCPListener))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// waitQueued polls until a connection waits in p's listen queue (a
// dialled one is there once Dial returns; bounded all the same).
func waitQueued(t *testing.T, p *PromptListener) {
	t.Helper()
	for i := 0; !p.waiting(); i++ {
		if i == 500 {
			t.Fatal("the dialled connection never showed in the listen queue")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestPromptListener: a prompt wakes the accept loop only when a
// connection waits, at most once per interval and once until the loop
// has run; the accept that follows gets the connection, and the next
// one waits again as an ordinary accept (the prompt's deadline is gone),
// while a deadline of the caller's own still ends Accept with a timeout.
func TestPromptListener(t *testing.T) {
	t.Run("nothing waits", func(t *testing.T) {
		p := listenPrompt(t)
		p.Prompt(time.Now())
		if n := p.Prompts(); n != 0 {
			t.Fatalf("prompted %d times with an empty listen queue", n)
		}
	})
	t.Run("a connection waits", func(t *testing.T) {
		p := listenPrompt(t)
		c1, err := net.Dial("tcp", p.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c1.Close()
		waitQueued(t, p)
		now := time.Now()
		p.Prompt(now)
		p.Prompt(now)                         // within the interval
		p.Prompt(now.Add(2 * PromptInterval)) // the accept loop has not run yet
		if n := p.Prompts(); n != 1 {
			t.Fatalf("prompted %d times, want 1", n)
		}
		a, err := p.Accept()
		if err != nil {
			t.Fatalf("the prompted accept: %v", err)
		}
		a.Close()
		got := make(chan error, 1)
		go func() {
			c, err := p.Accept()
			if err == nil {
				c.Close()
			}
			got <- err
		}()
		c2, err := net.Dial("tcp", p.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("the accept after a prompt: %v (the prompt's deadline was left set)", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the accept after a prompt never returned the next connection")
		}
	})
	t.Run("the caller's own deadline", func(t *testing.T) {
		p := listenPrompt(t)
		p.SetDeadline(time.Now().Add(-time.Second))
		_, err := p.Accept()
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Accept past the caller's deadline: %v, want a timeout", err)
		}
	})
}

// TestFrontPrompts: each connection the front holds calls Prompt before
// it reads a request.
func TestFrontPrompts(t *testing.T) {
	var calls atomic.Int64
	_, addr, _ := startHandOverFront(t, FrontOptions{Prompt: func(time.Time) { calls.Add(1) }}, http.HandlerFunc(echo))
	const conns = 3
	for range conns {
		roundTrip(t, addr, "GET /files/a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
	}
	if n := calls.Load(); n < conns {
		t.Fatalf("Prompt called %d times for %d connections", n, conns)
	}
}
