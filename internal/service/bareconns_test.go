package service

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// slotConn stands for frontdoor's limited connection: a slot given back
// once, by Release or Close.
type slotConn struct {
	net.Conn
	tcp       bool // exposes its TCP connection
	readAhead bool // holds bytes read ahead of it (ReadTCP nil)
	released  *atomic.Int32
	once      atomic.Bool
}

func (c *slotConn) TCPConn() *net.TCPConn {
	if !c.tcp {
		return nil
	}
	return c.Conn.(*net.TCPConn)
}

func (c *slotConn) ReadTCP() *net.TCPConn {
	if c.readAhead {
		return nil
	}
	return c.TCPConn()
}

func (c *slotConn) Release() {
	if c.once.CompareAndSwap(false, true) {
		c.released.Add(1)
	}
}

func (c *slotConn) Close() error { c.Release(); return c.Conn.Close() }

type slotListener struct {
	net.Listener
	tcp, readAhead bool
	released       *atomic.Int32
}

func (l *slotListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &slotConn{Conn: c, tcp: l.tcp, readAhead: l.readAhead, released: l.released}, nil
}

// TestBareConns: a fasthttp server behind BareConns is handed the TCP
// connection itself when the wrapper exposes it (so that it can writev),
// the wrapper's slot is given back once the connection ends, closed or
// hijacked, and a wrapper without a TCP connection, or holding bytes read
// ahead of it, is served as it is.
func TestBareConns(t *testing.T) {
	tests := []struct {
		name      string
		tcp       bool   // the wrapper exposes its TCP connection
		readAhead bool   // the wrapper holds bytes read ahead of it
		path      string // /hijack: the handler hijacks the connection
		wantType  string // the connection type the handler sees
	}{
		{"wrapped TCP connection", true, false, "/", "*net.TCPConn"},
		{"hijacked", true, false, "/hijack", "*net.TCPConn"},
		{"wrapper without TCP connection", false, false, "/", "*service.slotConn"},
		{"wrapper that read ahead", true, true, "/", "*service.slotConn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var released atomic.Int32
			var seen atomic.Value
			var bare BareConns
			srv := &fasthttp.Server{ConnState: bare.ConnState, Handler: func(ctx *fasthttp.RequestCtx) {
				seen.Store(fmt.Sprintf("%T", ctx.Conn()))
				if string(ctx.Path()) == "/hijack" {
					ctx.HijackSetNoResponse(true)
					ctx.Hijack(func(c net.Conn) {
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
					})
					return
				}
				ctx.SetBodyString("ok")
			}}
			done := make(chan error, 1)
			go func() {
				done <- srv.Serve(bare.Listener(&slotListener{Listener: ln, tcp: tc.tcp, readAhead: tc.readAhead, released: &released}))
			}()
			t.Cleanup(func() { srv.Shutdown(); <-done })

			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, "GET "+tc.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 2))
			if resp.StatusCode != 200 || string(body) != "ok" {
				t.Fatalf("answer %d %q, want 200 ok", resp.StatusCode, body)
			}
			if got := seen.Load(); got != tc.wantType {
				t.Errorf("the handler served a %v, want %s", got, tc.wantType)
			}
			c.Close()
			for deadline := time.Now().Add(5 * time.Second); released.Load() == 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond) // polled: fasthttp reports the end on its own goroutine
			}
			if n := released.Load(); n != 1 {
				t.Errorf("slot released %d times after the connection ended, want 1", n)
			}
			if n := bare.Held(); n != 0 {
				t.Errorf("%d connections still held after their end", n)
			}
		})
	}
}
