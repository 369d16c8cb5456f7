package transport

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

func mustKey(t *testing.T) Key {
	t.Helper()
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newTestMux starts a mux on 127.0.0.1:0 and closes it at test end.
func newTestMux(t *testing.T, k Key) *Mux {
	t.Helper()
	m, err := Listen(Config{BindAddr: "127.0.0.1:0", Key: k})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

func dialCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type routedConn struct {
	proto byte
	conn  net.Conn
}

// acceptAll runs an Accept loop on each sub-listener of m and reports every
// accepted conn tagged with the listener's proto. The loops end when m is
// closed; the cleanup waits for them.
func acceptAll(t *testing.T, m *Mux) <-chan routedConn {
	t.Helper()
	out := make(chan routedConn, 16)
	var wg sync.WaitGroup
	for _, p := range []byte{ProtoRaft, ProtoGossip, ProtoHTTP} {
		l := m.Listener(p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				out <- routedConn{proto: p, conn: c}
			}
		}()
	}
	t.Cleanup(func() {
		_ = m.Close()
		wg.Wait()
	})
	return out
}

// echoOnce reads len(want) bytes from c and writes them back.
func echoOnce(c net.Conn, n int) error {
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	_, err := c.Write(buf)
	return err
}
